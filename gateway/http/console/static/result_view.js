// A function's result, by content type: text, a JSON tree, images and audio inline, other bytes
// as a download. Also the gateway's error envelope.

import { h, pretty } from "./dom.js";

export function jsonTree(value, label = "") {
  if (value === null || typeof value !== "object") {
    return h("span", { class: `json-${value === null ? "null" : typeof value}` }, JSON.stringify(value));
  }
  const entries = Array.isArray(value) ? value.map((item, index) => [index, item]) : Object.entries(value);
  const summary = Array.isArray(value) ? `[${entries.length} item${entries.length === 1 ? "" : "s"}]` : `{${entries.length} key${entries.length === 1 ? "" : "s"}}`;
  return h("details", { class: "json-tree", open: true },
    h("summary", {}, label ? `${label} ` : "", summary),
    h("ul", {}, entries.map(([key, item]) =>
      h("li", {}, item !== null && typeof item === "object" ? jsonTree(item, String(key)) : [h("span", { class: "json-key" }, `${key}: `), jsonTree(item)]))));
}

function bytesOf(base64) {
  const binary = atob(base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

export function contentItem(item, index) {
  if (item.type === "text") return h("pre", { class: "result-text" }, item.text);
  if (item.type === "json") return h("div", { class: "result-json" }, jsonTree(item.json));
  if (item.type === "binary") {
    const mime = item.mime_type || "application/octet-stream";
    const source = `data:${mime};base64,${item.data}`;
    if (mime.startsWith("image/")) return h("img", { src: source, alt: `image result ${index + 1} (${mime})`, class: "result-image" });
    if (mime.startsWith("audio/")) return h("audio", { controls: true, src: source, "aria-label": `audio result ${index + 1}` });
    const bytes = bytesOf(item.data);
    const url = URL.createObjectURL(new Blob([bytes], { type: mime }));
    return h("a", { href: url, download: `result-${index + 1}`, class: "download" }, `Download result ${index + 1} (${mime}, ${bytes.length} bytes)`);
  }
  return h("pre", {}, pretty(item));
}

/** The body of a successful invoke: {is_error, content, structured, request_id, timing, error}. */
export function resultView(result) {
  const timing = result.timing ? `${result.timing.duration_ms} ms (queued ${result.timing.queued_ms} ms)` : "";
  const header = h("p", { class: result.is_error ? "outcome bad" : "outcome good" },
    h("strong", {}, result.is_error ? "Function failed" : "Result"),
    timing ? ` · ${timing}` : "", result.request_id ? ` · request ${result.request_id}` : "");
  const parts = [header];
  if (result.is_error && result.error) parts.push(errorView(result.error));
  (result.content || []).forEach((item, index) => parts.push(contentItem(item, index)));
  if (!(result.content || []).length && result.structured !== null && result.structured !== undefined) {
    parts.push(jsonTree(result.structured));
  }
  parts.push(h("details", { class: "raw" }, h("summary", {}, "Raw JSON"), h("pre", {}, pretty(result))));
  return h("div", { class: "result", "data-testid": "result" }, parts);
}

/** The gateway's error envelope (`error` of {"error": {...}}), violations and suggestions included. */
export function errorView(error, status) {
  return h("div", { class: "error-box", role: "alert" },
    h("p", {}, h("strong", {}, status ? `${status} ${error.code}` : error.code || "error"), `: ${error.message}`),
    error.violations && error.violations.length
      ? h("ul", {}, error.violations.map((v) => h("li", {}, v.message)))
      : null,
    error.suggestions && error.suggestions.length ? h("p", {}, `Did you mean: ${error.suggestions.join(", ")}?`) : null);
}
