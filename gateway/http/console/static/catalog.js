// The catalog: runtimes, namespaces and functions the key may call, searched through the
// router, and one function's schema, tool forms and a form to try it.

import { api, apiEvents, ApiError, toolName } from "./api.js";
import { h, pretty } from "./dom.js";
import { schemaForm } from "./schema_form.js";
import { contentItem, resultView, errorView } from "./result_view.js";

export class Catalog {
  constructor(status) {
    this.status = status;
    this.list = document.getElementById("function-list");
    this.detail = document.getElementById("function-detail");
    this.note = document.getElementById("search-note");
    this.runtimes = document.getElementById("runtimes");
    this.functions = [];
    this.namespaces = [];
    this.tools = { openai: new Map(), mcp: new Map() };
  }

  async load() {
    const [functions, namespaces, openai, mcp] = await Promise.all([
      api("v1/functions"), api("v1/namespaces"), api("v1/tools?format=openai"), api("v1/tools?format=mcp"),
    ]);
    this.functions = functions.functions;
    this.namespaces = namespaces.namespaces;
    this.tools.openai = new Map(openai.tools.map((tool) => [tool.function.name, tool]));
    this.tools.mcp = new Map(mcp.tools.map((tool) => [tool.name, tool]));
    this.note.textContent = "";
    this.render(this.functions);
    this.loadRuntimes();
  }

  async loadRuntimes() {
    try {
      const ready = await api("readyz");
      const names = Object.entries(ready.runtimes || {});
      this.runtimes.textContent = names.length
        ? "Runtimes: " + names.map(([name, ok]) => `${name} (${ok ? "ready" : "not ready"})`).join(", ")
        : "";
    } catch {
      this.runtimes.textContent = "";
    }
  }

  render(functions, ranked = false) {
    const description = new Map(this.namespaces.map((ns) => [ns.name, ns.description]));
    const groups = new Map();
    for (const spec of functions) {
      const key = ranked ? "" : spec.namespace;
      groups.set(key, [...(groups.get(key) || []), spec]);
    }
    const sections = [...groups.entries()].map(([namespace, specs]) => {
      const title = ranked ? "Best matches" : namespace || "No namespace";
      return h("section", { class: "group" },
        h("h3", {}, title),
        !ranked && description.get(namespace) ? h("p", { class: "muted" }, description.get(namespace)) : null,
        h("ul", {}, specs.map((spec) => h("li", {},
          h("button", { type: "button", class: "function-link", "data-name": spec.name, onclick: () => this.show(spec) }, spec.name),
          h("span", { class: "muted" }, ` ${firstLine(spec.description)}`)))));
    });
    this.list.replaceChildren(...(sections.length ? sections : [h("p", {}, "No functions.")]));
  }

  async search(query) {
    if (!query.trim()) {
      this.note.textContent = "";
      this.render(this.functions);
      return;
    }
    const byTool = new Map(this.functions.map((spec) => [toolName(spec.name), spec]));
    try {
      const found = await api(`v1/tools?format=openai&k=10&query=${encodeURIComponent(query)}`);
      const specs = found.tools.map((tool) => byTool.get(tool.function.name)).filter(Boolean);
      this.note.textContent = `${specs.length} function${specs.length === 1 ? "" : "s"} for “${query}”, best first (ranked by the router).`;
      this.render(specs, true);
    } catch (error) {
      // No router (disabled, or no model): fall back to matching names and descriptions.
      const words = query.toLowerCase().split(/\s+/).filter(Boolean);
      const specs = this.functions.filter((spec) =>
        words.some((word) => `${spec.name} ${spec.description}`.toLowerCase().includes(word)));
      this.note.textContent = `The router did not answer (${error.message}); ${specs.length} functions match by text.`;
      this.render(specs, true);
    }
  }

  /** Open a function by name, its form filled with `args` (its title takes the focus). */
  open(name, args = {}) {
    const spec = this.functions.find((candidate) => candidate.name === name);
    if (!spec) {
      this.status.textContent = `${name} is not in the catalog for this key.`;
      return;
    }
    this.show(spec, args);
  }

  show(spec, args = {}) {
    const form = schemaForm(spec.parameters);
    form.fill(args);
    const output = h("div", { class: "invoke-output", "aria-live": "polite" });
    const submit = async (event) => {
      event.preventDefault();
      const args = form.read();
      if (args === null) return;
      output.replaceChildren(h("p", { class: "muted" }, "Calling…"));
      const path = `v1/functions/${encodeURIComponent(spec.name)}/invoke`;
      try {
        if (spec.streaming) await stream(path, args, output);
        else output.replaceChildren(resultView(await api(path, args)));
      } catch (error) {
        if (!(error instanceof ApiError)) {
          output.replaceChildren(h("p", { role: "alert" }, `The gateway did not answer: ${error.message}`));
          return;
        }
        const unplaced = form.showViolations(error.error.violations || []);
        const shown = error.error.violations && unplaced.length === 0 ? { ...error.error, violations: [] } : { ...error.error, violations: unplaced };
        output.replaceChildren(errorView(shown, error.status));
      }
    };
    const tool = toolName(spec.name);
    const annotations = Object.entries(spec.annotations || {}).filter(([name, value]) => value && name !== "title");
    this.detail.replaceChildren(
      h("h3", { id: "detail-title", tabindex: "-1" }, spec.annotations && spec.annotations.title ? `${spec.annotations.title} (${spec.name})` : spec.name),
      h("p", { class: "description" }, spec.description || "(no description)"),
      h("p", { class: "badges" },
        annotations.map(([name]) => h("span", { class: "badge" }, name.replace("_", " "))),
        spec.streaming ? h("span", { class: "badge" }, "streaming") : null,
        spec.timeout ? h("span", { class: "badge" }, `timeout ${spec.timeout} s`) : null,
        spec.version ? h("span", { class: "badge" }, `version ${spec.version}`) : null),
      h("h4", {}, "Try it"),
      h("form", { class: "invoke-form", novalidate: true, "aria-labelledby": "detail-title", onsubmit: submit },
        form.element, h("button", { type: "submit" }, "Invoke")),
      output,
      h("h4", {}, "Definition"),
      block("Input schema", spec.parameters),
      block("Output schema", spec.output_schema),
      block("OpenAI tool", this.tools.openai.get(tool)),
      block("MCP tool", this.tools.mcp.get(tool)),
    );
    this.detail.querySelector("#detail-title").focus();
  }
}

/** A streaming function's items, shown as they arrive, then its result. */
async function stream(path, args, output) {
  const note = h("p", { class: "muted" }, "Streaming…");
  const items = h("ol", { class: "stream-items", "aria-label": "Streamed items" });
  output.replaceChildren(note, items);
  await apiEvents(path, args, (name, data) => {
    if (name === "content") items.append(h("li", {}, contentItem(data, items.children.length)));
    else if (name === "result") {
      note.textContent = `${items.children.length} item${items.children.length === 1 ? "" : "s"} streamed.`;
      output.append(resultView(data));
    } else if (name === "error") {
      note.textContent = "The call failed after these items.";
      output.append(errorView(data.error));
    }
  });
}

function firstLine(text) {
  return (text || "").split("\n")[0];
}

function block(title, value, open = false) {
  if (value === undefined || value === null) return h("p", { class: "muted" }, `${title}: none`);
  return h("details", { class: "definition", open }, h("summary", {}, title), h("pre", { class: "code" }, pretty(value)));
}

