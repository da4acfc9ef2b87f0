// A form generated from a function's input schema, and the errors the gateway sends back
// placed next to the field each one names (a violation's `path`, "a" or "point.x" or "tags.0").

import { h, uniqueId, pretty } from "./dom.js";

function resolve(schema, root) {
  let current = schema || {};
  for (let hops = 0; current.$ref && hops < 10; hops += 1) {
    const parts = current.$ref.replace(/^#\//, "").split("/");
    const target = parts.reduce((node, part) => (node ? node[part] : undefined), root) || {};
    // Words beside a $ref (the argument's own description) say more than the referenced type's.
    current = { ...target, description: current.description || target.description };
  }
  // Optional[X] is anyOf [X, null]: show X.
  const variants = current.anyOf || current.oneOf;
  if (variants) {
    const real = variants.filter((variant) => variant.type !== "null");
    if (real.length === 1) return { ...resolve(real[0], root), description: current.description, default: current.default };
  }
  return current;
}

function typeOf(schema) {
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
  if (schema.enum) return "enum";
  if (type === "object" && schema.properties) return "object";
  if (["string", "integer", "number", "boolean"].includes(type)) return type;
  return "json"; // arrays, free-form objects, unions: typed as JSON
}

class Field {
  constructor(path, label, schema, required, root) {
    this.path = path;
    this.schema = schema;
    this.required = required;
    this.kind = typeOf(schema);
    this.id = uniqueId("arg");
    this.errorId = `${this.id}-error`;
    this.element = this.kind === "object" ? this.fieldset(label, root) : this.single(label);
  }

  single(label) {
    const help = this.help();
    const described = [help && `${this.id}-help`, this.errorId].filter(Boolean).join(" ");
    const common = { id: this.id, name: this.path, "aria-describedby": described, "aria-required": this.required ? "true" : undefined };
    const fallback = this.schema.default;
    if (this.kind === "enum" || this.kind === "boolean") {
      const choices = this.kind === "enum" ? this.schema.enum : [true, false];
      this.input = h("select", common,
        h("option", { value: "" }, this.required ? "(choose)" : "(not set)"),
        choices.map((choice, index) => h("option", { value: String(index) }, typeof choice === "string" ? choice : JSON.stringify(choice))));
      this.choices = choices;
    } else if (this.kind === "json") {
      this.input = h("textarea", { ...common, rows: 3, spellcheck: "false", class: "code",
        placeholder: fallback !== undefined ? JSON.stringify(fallback) : (this.schema.type === "array" ? "[ ]" : "JSON") });
      this.input.addEventListener("input", () => this.checkJson());
    } else {
      const numeric = this.kind === "integer" || this.kind === "number";
      this.input = h("input", { ...common, type: "text", spellcheck: "false",
        inputmode: numeric ? (this.kind === "integer" ? "numeric" : "decimal") : undefined,
        placeholder: fallback !== undefined ? String(fallback) : undefined });
    }
    return h("div", { class: "field", "data-path": this.path },
      h("label", { for: this.id }, label, this.required ? h("span", { class: "required", "aria-hidden": "true" }, " *") : null,
        h("span", { class: "type" }, ` ${this.describeType()}`)),
      this.input,
      help ? h("small", { id: `${this.id}-help`, class: "muted" }, help) : null,
      h("p", { id: this.errorId, class: "field-error", role: "alert" }));
  }

  fieldset(label, root) {
    const required = new Set(this.schema.required || []);
    this.children = Object.entries(this.schema.properties).map(([name, sub]) =>
      new Field(`${this.path}.${name}`, name, resolve(sub, root), required.has(name), root));
    const help = this.help();
    // Focusable from script (tabindex -1), so an error about the whole object can take the focus.
    return h("fieldset", { class: "field", "data-path": this.path, "aria-describedby": this.errorId, tabindex: "-1" },
      h("legend", {}, label, this.required ? h("span", { class: "required", "aria-hidden": "true" }, " *") : null),
      help ? h("small", { class: "muted" }, help) : null,
      this.children.map((child) => child.element),
      h("p", { id: this.errorId, class: "field-error", role: "alert" }));
  }

  help() {
    return this.schema.description || "";
  }

  describeType() {
    if (this.kind === "enum") return "(one of)";
    if (this.kind === "json") return `(${this.schema.type === "array" ? "array" : "JSON"})`;
    return `(${this.kind})`;
  }

  checkJson() {
    const text = this.input.value.trim();
    if (!text) return this.setError("");
    try {
      const value = JSON.parse(text);
      if (this.schema.type === "array" && !Array.isArray(value)) return this.setError("expected a JSON array");
      return this.setError("");
    } catch (error) {
      return this.setError(`not valid JSON: ${error.message}`);
    }
  }

  /** [present, value]; a field left empty is left out, so the function's default applies. */
  read() {
    if (this.kind === "object") {
      const value = {};
      for (const child of this.children) {
        const [present, item] = child.read();
        if (present) value[child.path.slice(this.path.length + 1)] = item;
      }
      return [Object.keys(value).length > 0, value];
    }
    const raw = this.input.value;
    if (raw.trim() === "") return [false, undefined];
    if (this.kind === "enum" || this.kind === "boolean") return [true, this.choices[Number(raw)]];
    if (this.kind === "json") return [true, JSON.parse(raw)];
    if (this.kind === "integer" || this.kind === "number") {
      // Not a number: sent as typed, so the gateway's own check names the problem.
      const number = Number(raw.trim());
      return [true, Number.isFinite(number) ? number : raw];
    }
    return [true, raw];
  }

  /** Show `value` in the field (an argument planned elsewhere), as `read()` would give it back. */
  write(value) {
    if (value === undefined) return;
    if (this.kind === "object") {
      for (const child of this.children) child.write((value || {})[child.path.slice(this.path.length + 1)]);
      return;
    }
    if (this.kind === "enum" || this.kind === "boolean") {
      const index = this.choices.findIndex((choice) => JSON.stringify(choice) === JSON.stringify(value));
      this.input.value = index < 0 ? "" : String(index);
    } else if (this.kind === "json") this.input.value = JSON.stringify(value);
    else this.input.value = String(value);
  }

  setError(message) {
    const error = this.element.querySelector(`#${this.errorId}`);
    error.textContent = message;
    const target = this.input || this.element;
    if (message) target.setAttribute("aria-invalid", "true");
    else target.removeAttribute("aria-invalid");
    return !message;
  }

  all() {
    return this.kind === "object" ? [this, ...this.children.flatMap((child) => child.all())] : [this];
  }
}

/** The form for `schema`; `read()` gives the arguments object or null after showing client-side
 * errors, `fill(args)` shows given arguments, `showViolations(list)` places the gateway's and
 * returns those no field claims. */
export function schemaForm(schema) {
  const root = schema || {};
  const top = resolve(root, root);
  const required = new Set(top.required || []);
  const fields = Object.entries(top.properties || {}).map(([name, sub]) =>
    new Field(name, name, resolve(sub, root), required.has(name), root));
  const every = fields.flatMap((field) => field.all());
  const element = h("div", { class: "schema-form" },
    fields.length ? fields.map((field) => field.element) : h("p", { class: "muted" }, "This function takes no arguments."));

  function clear() {
    every.forEach((field) => field.setError(""));
  }

  function read() {
    clear();
    const bad = every.filter((field) => field.kind === "json").filter((field) => !field.checkJson());
    if (bad.length) {
      bad[0].input.focus();
      return null;
    }
    const args = {};
    for (const field of fields) {
      const [present, value] = field.read();
      if (present) args[field.path] = value;
    }
    return args;
  }

  function showViolations(violations) {
    const unplaced = [];
    const byField = new Map();
    for (const violation of violations) {
      const path = violation.path || "";
      const owner = every
        .filter((field) => path === field.path || path.startsWith(field.path + "."))
        .sort((a, b) => b.path.length - a.path.length)[0];
      if (!owner) unplaced.push(violation);
      else byField.set(owner, [...(byField.get(owner) || []), violation.message]);
    }
    for (const [field, messages] of byField) field.setError(messages.join("; "));
    const first = [...byField.keys()][0];
    if (first) (first.input || first.element).focus();
    return unplaced;
  }

  function fill(args) {
    for (const field of fields) field.write(args[field.path]);
  }

  return { element, read, fill, clear, showViolations, preview: (args) => pretty(args) };
}
