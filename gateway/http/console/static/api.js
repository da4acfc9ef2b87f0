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

function request(path, body, accept) {
  const headers = { Accept: accept };
  const key = getKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  const init = { method: "GET", headers, credentials: "omit", cache: "no-store" };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  // The page is served at <gateway>/ui/, so "../" is the gateway's root, behind a proxy prefix too.
  return fetch(new URL("../" + path, document.baseURI), init);
}

async function failure(response) {
  const text = await response.text();
  let document_ = null;
  try {
    document_ = text ? JSON.parse(text) : null;
  } catch {
    document_ = null;
  }
  return new ApiError(response.status, document_, text);
}

/** POST with `Accept: text/event-stream`: `onEvent(name, data)` for each event as it arrives
 * ("content" items, then "result", or "error" for a call that failed midway). */
export async function apiEvents(path, body, onEvent) {
  const response = await request(path, body, "text/event-stream");
  if (!response.ok) throw await failure(response);
  if (!(response.headers.get("content-type") || "").startsWith("text/event-stream")) {
    onEvent("result", await response.json());
    return;
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        // Comments (": keep-alive") carry nothing.
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

/** GET a path that answers text (the Prometheus exposition at "metrics"). */
export async function apiText(path) {
  const response = await request(path, undefined, "text/plain");
  if (!response.ok) throw await failure(response);
  return response.text();
}

/** GET or POST a path of the API ("v1/functions"), relative to the gateway the page came from. */
export async function api(path, body) {
  const response = await request(path, body, "application/json");
  if (!response.ok) throw await failure(response);
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

export function toolName(qualified) {
  return qualified.replace(".", "__");
}
