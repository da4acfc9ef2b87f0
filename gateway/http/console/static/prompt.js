// Try a prompt: route it (candidates, their fused score and its dense and lexical parts), or execute it
// (dry run: the extracted arguments; a call that may change data waits for the user to confirm it).

import { api, ApiError } from "./api.js";
import { h, pretty } from "./dom.js";
import { argumentsTable, confirmPanel, destructiveBadge, dryRunNote, refusalView } from "./planned_call.js";
import { errorView, resultView } from "./result_view.js";

function candidatesTable(candidates, match) {
  return h("table", { class: "candidates" },
    h("caption", {}, "Candidates, best first"),
    h("thead", {}, h("tr", {}, ["Function", "Score", "Dense", "Lexical", "Match"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, candidates.map((candidate) => h("tr", {},
      h("th", { scope: "row" }, candidate.name),
      h("td", {}, h("meter", { min: 0, max: 1, value: Math.max(0, candidate.score), "aria-label": `score of ${candidate.name}` }), ` ${candidate.score.toFixed(4)}`),
      // The two signals the score fuses: embedding cosine and BM25 (absent from an older gateway).
      ["dense", "lexical"].map((signal) => h("td", { class: `score-${signal}` },
        candidate.scores ? candidate.scores[signal].toFixed(4) : "")),
      h("td", {}, candidate.name === match ? "chosen" : "")))));
}

function outcomeOf(done) {
  if (done.status === "needs_confirmation") return confirmPanel(done);
  if (done.status === "planned") return dryRunNote(done);
  return done.result ? resultView(done.result) : null;
}

/** `openFunction(name, args)` shows a function's form in the catalog (for a call free text may not run). */
export function setupPrompt(openFunction) {
  const form = document.getElementById("prompt-form");
  const output = document.getElementById("prompt-output");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const action = (event.submitter && event.submitter.value) || "route";
    const prompt = form.elements.prompt.value;
    const kText = form.elements.k.value.trim();
    const body = { prompt };
    if (kText) body.k = Number.isFinite(Number(kText)) ? Number(kText) : kText;
    const session = form.elements.session_id.value.trim();
    if (session) body.session_id = session;
    output.replaceChildren(h("p", { class: "muted" }, "Working…"));
    try {
      if (action === "route") {
        const ranked = await api("v1/route", body);
        output.replaceChildren(
          h("p", {}, ranked.match ? ["Match: ", h("strong", {}, ranked.match)] : "No function is a confident match."),
          candidatesTable(ranked.candidates || [], ranked.match));
        return;
      }
      const done = await api("v1/execute", { ...body, dry_run: action === "dry_run" });
      output.replaceChildren(
        h("p", {}, done.function ? ["Function: ", h("strong", {}, done.function)] : "No function chosen.",
          done.follow_up ? " (a follow-up of the session's last call)" : "", " ", destructiveBadge(done.confirmation)),
        argumentsTable(done.arguments, done.argument_sources),
        outcomeOf(done),
        candidatesTable(done.candidates || [], done.function),
        done.code ? h("details", { class: "definition" }, h("summary", {}, "The same call as code"),
          Object.entries(done.code).map(([language, code]) => [h("h5", {}, language), h("pre", { class: "code" }, code)])) : null,
        h("details", { class: "raw" }, h("summary", {}, "Raw JSON"), h("pre", {}, pretty(done))));
    } catch (error) {
      if (error instanceof ApiError && error.error.code === "not_from_free_text") {
        output.replaceChildren(refusalView(error.error, error.status, openFunction));
        return;
      }
      output.replaceChildren(error instanceof ApiError
        ? errorView(error.error, error.status)
        : h("p", { role: "alert" }, `The gateway did not answer: ${error.message}`));
    }
  });
}
