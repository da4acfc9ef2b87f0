// A free-text call as the gateway planned it: the arguments and where each came from, and
// whether it waits for a confirmation. A call that waits runs only when Run is pressed, which
// sends its one-time token back (POST /v1/execute {"confirm"}); Cancel drops the token.

import { api, ApiError } from "./api.js";
import { h } from "./dom.js";
import { errorView, resultView } from "./result_view.js";

// An argument's source when a follow-up carried it over from the session's previous call.
const CARRIED = "previous";

export function argumentsTable(args, sources) {
  const entries = Object.entries(args || {});
  if (!entries.length) return h("p", { class: "muted" }, "No arguments.");
  const from = (name) => {
    const source = (sources || {})[name] || "";
    return source === CARRIED ? h("span", { class: "badge carried" }, "from the session") : source;
  };
  return h("table", { class: "arguments" },
    h("caption", {}, "Extracted arguments"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Argument"), h("th", { scope: "col" }, "Value"), h("th", { scope: "col" }, "From"))),
    h("tbody", {}, entries.map(([name, value]) => h("tr", { class: (sources || {})[name] === CARRIED ? "carried" : null },
      h("th", { scope: "row" }, name), h("td", {}, h("code", {}, JSON.stringify(value))), h("td", {}, from(name))))));
}

/** The badge of a call that may delete or overwrite data. */
export function destructiveBadge(confirmation) {
  return confirmation && confirmation.destructive ? h("span", { class: "badge danger" }, "destructive") : null;
}

/** What a dry run says of running the call for real: at once, or after a confirmation (and why). */
export function dryRunNote(planned) {
  const confirmation = planned.confirmation;
  if (!confirmation) return h("p", { class: "muted" }, "Dry run: not called. Execute would run it at once.");
  return h("div", { class: confirmation.destructive ? "plan destructive" : "plan" },
    h("p", {}, h("strong", {}, "Dry run: not called."), " Execute would ask for a confirmation first."),
    h("p", { class: "reason" }, confirmation.reason));
}

/** The panel of a call that waits for its confirmation: Run sends the token, once; Cancel drops it. */
export function confirmPanel(planned) {
  const confirmation = planned.confirmation;
  let token = confirmation.token;
  const destructive = Boolean(confirmation.destructive);
  const expires = new Date(Date.now() + confirmation.expires_in * 1000);
  const outcome = h("div", { class: "plan-outcome", tabindex: "-1", "aria-live": "polite" });
  const run = h("button", { type: "button", class: destructive ? "run danger" : "run", onclick: () => confirm() }, "Run it");
  const cancel = h("button", { type: "button", onclick: () => finish(h("p", { class: "muted" }, "Cancelled: nothing ran.")) }, "Cancel");
  const buttons = h("div", { class: "row" }, run, cancel);

  function finish(...shown) {
    token = null;
    buttons.remove();
    outcome.replaceChildren(...shown);
    outcome.focus();
  }

  async function confirm() {
    if (!token) return;
    run.disabled = cancel.disabled = true;
    outcome.replaceChildren(h("p", { class: "muted" }, "Running…"));
    try {
      const done = await api("v1/execute", { confirm: token });
      finish(h("p", {}, "Confirmed: ", h("strong", {}, done.function), " ran."), resultView(done.result));
    } catch (error) {
      if (error instanceof ApiError && error.status === 409) {
        finish(h("div", { class: "error-box", role: "alert" },
          h("p", {}, h("strong", {}, "This confirmation expired or was used already: nothing ran."),
            " Execute the prompt again to plan the call anew."),
          h("p", { class: "muted" }, `${error.status} ${error.error.code}: ${error.message}`)));
        return;
      }
      // Anything else (a rate limit, the gateway away) left the token unspent: Run may be tried again.
      run.disabled = cancel.disabled = false;
      outcome.replaceChildren(error instanceof ApiError
        ? errorView(error.error, error.status)
        : h("p", { role: "alert" }, `The gateway did not answer: ${error.message}`));
    }
  }

  return h("section", { class: destructive ? "plan destructive" : "plan", "aria-label": "Planned call" },
    h("h3", {}, "Planned, not run: confirm to run it"),
    h("p", { class: "reason" }, confirmation.reason),
    h("p", { class: "muted" }, `The confirmation expires at ${expires.toLocaleTimeString()} (in ${Math.round(confirmation.expires_in)} s).`),
    buttons,
    outcome);
}

/** A refusal of a function free text may never run (403 not_from_free_text): the call it planned,
 * and a way to call the function directly, through its form in the catalog. */
export function refusalView(error, status, openFunction) {
  return h("div", { class: "plan refused" },
    errorView(error, status),
    h("p", {}, "Planned: ", h("strong", {}, error.function || "?"), ". Free text may never run it; call it directly."),
    argumentsTable(error.arguments, error.argument_sources),
    error.function && openFunction
      ? h("button", { type: "button", onclick: () => openFunction(error.function, error.arguments || {}) },
        `Open ${error.function} in the catalog`)
      : null);
}
