// The console's only way out: the gateway's public HTTP API, with the key the user typed.

const KEY = "toolmesh.console.key";

export function getKey() {
  return sessionStorage.getItem(KEY) || "";
}

export function setKey(key) {
  if (key) sessionStorage.setItem(KEY, key);
  else sessionStorage.removeItem(KEY);
}

/** A non-2xx answer; `error` is the gateway's error envelope ({code, message, violations, ...}). */
export class ApiError extends Error {
  constructor(status, document, text) {
    const error = (document && document.error) || { code: "http_" + status, message: text || String(status) };
    super(error.message);
    this.status = status;
    this.error = error;
  }
}

/** GET or POST a path of the API ("v1/functions"), relative to the gateway the page came from. */
export async function api(path, body) {
  const headers = { Accept: "application/json" };
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  const init = { method: "GET", headers, credentials: "omit", cache: "no-store" };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  // The page is served at <gateway>/ui/, so "../" is the gateway's root, behind a proxy prefix too.
  const response = await fetch(new URL("../" + path, document.baseURI), init);
  const text = await response.text();
  let document_ = null;
  try {
    document_ = text ? JSON.parse(text) : null;
  } catch {
    document_ = null;
  }
  if (!response.ok) throw new ApiError(response.status, document_, text);
  return document_;
}

export function toolName(qualified) {
  return qualified.replace(".", "__");
}
