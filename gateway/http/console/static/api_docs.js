// The API, from /openapi.json: each operation with its parameters and schemas, and a form to send it.

import { api, apiText, ApiError } from "./api.js";
import { h, pretty, uniqueId } from "./dom.js";
import { errorView } from "./result_view.js";

function operationForm(method, path, operation) {
  const parameters = (operation.parameters || []).filter((p) => p.in === "path" || p.in === "query");
  const inputs = parameters.map((parameter) => {
    const id = uniqueId("param");
    const input = h("input", { id, type: "text", spellcheck: "false", "aria-required": parameter.required ? "true" : undefined });
    const field = h("div", { class: "field" },
      h("label", { for: id }, parameter.name, h("span", { class: "type" }, ` (${parameter.in}${parameter.required ? ", required" : ""})`)),
      input,
      parameter.description ? h("small", { class: "muted" }, parameter.description) : null);
    return { parameter, input, field };
  });
  const bodyId = uniqueId("body");
  const body = operation.requestBody
    ? h("textarea", { id: bodyId, rows: 4, class: "code", spellcheck: "false", placeholder: "{ }" })
    : null;
  const output = h("div", { "aria-live": "polite" });
  const send = async (event) => {
    event.preventDefault();
    let target = path;
    const query = new URLSearchParams();
    for (const { parameter, input } of inputs) {
      const value = input.value.trim();
      if (parameter.in === "path") target = target.replace(`{${parameter.name}}`, encodeURIComponent(value));
      else if (value) query.set(parameter.name, value);
    }
    const url = target.replace(/^\//, "") + (query.size ? `?${query}` : "");
    let document_;
    try {
      document_ = body && body.value.trim() ? JSON.parse(body.value) : method === "post" ? {} : undefined;
    } catch (error) {
      output.replaceChildren(h("p", { role: "alert", class: "field-error" }, `The body is not valid JSON: ${error.message}`));
      return;
    }
    try {
      const answer = path === "/metrics" || path.startsWith("/v1/metrics/pods/") ? await apiText(url) : await api(url, document_);
      output.replaceChildren(h("pre", { class: "code", "data-testid": "api-answer" }, typeof answer === "string" ? answer : pretty(answer)));
    } catch (error) {
      output.replaceChildren(error instanceof ApiError
        ? errorView(error.error, error.status)
        : h("p", { role: "alert" }, `The gateway did not answer: ${error.message}`));
    }
  };
  return h("form", { class: "api-form", novalidate: true, onsubmit: send },
    inputs.map(({ field }) => field),
    body ? h("div", { class: "field" }, h("label", { for: bodyId }, "Body (JSON)"), body) : null,
    h("button", { type: "submit" }, `Send ${method.toUpperCase()}`),
    output);
}

export async function loadApiDocs() {
  const container = document.getElementById("api-operations");
  let document_;
  try {
    document_ = await api("openapi.json");
  } catch (error) {
    container.replaceChildren(h("p", {}, `The OpenAPI document did not load: ${error.message}`));
    return;
  }
  const operations = Object.entries(document_.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ path, method, operation })));
  container.replaceChildren(...operations.map(({ path, method, operation }) =>
    h("details", { class: "operation" },
      h("summary", {}, h("code", {}, `${method.toUpperCase()} ${path}`), ` ${operation.summary || ""}`),
      operation.description ? h("p", {}, operation.description) : null,
      operation.requestBody ? h("details", { class: "definition" }, h("summary", {}, "Request body"),
        h("pre", { class: "code" }, pretty(operation.requestBody))) : null,
      h("details", { class: "definition" }, h("summary", {}, "Responses"),
        h("pre", { class: "code" }, pretty(operation.responses || {}))),
      operationForm(method, path, operation))));
}
