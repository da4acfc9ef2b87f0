// Try a prompt: route it (candidates, their fused score and its dense and lexical parts), or execute it (dry run: the extracted arguments).

import { api, ApiError } from "./api.js";
import { h, pretty } from "./dom.js";
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

function argumentsTable(args, sources) {
  const entries = Object.entries(args || {});
  if (!entries.length) return h("p", { class: "muted" }, "No arguments.");
  return h("table", { class: "arguments" },
    h("caption", {}, "Extracted arguments"),
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Argument"), h("th", { scope: "col" }, "Value"), h("th", { scope: "col" }, "From"))),
    h("tbody", {}, entries.map(([name, value]) => h("tr", {},
      h("th", { scope: "row" }, name), h("td", {}, h("code", {}, JSON.stringify(value))), h("td", {}, (sources || {})[name] || "")))));
}

export function setupPrompt() {
  const form = document.getElementById("prompt-form");
  const output = document.getElementById("prompt-output");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const action = (event.submitter && event.submitter.value) || "route";
    const prompt = form.elements.prompt.value;
    const kText = form.elements.k.value.trim();
    const body = { prompt };
    if (kText) body.k = Number.isFinite(Number(kText)) ? Number(kText) : kText;
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
          done.follow_up ? " (a follow-up of the session's last call)" : ""),
        argumentsTable(done.arguments, done.argument_sources),
        done.result ? resultView(done.result) : h("p", { class: "muted" }, action === "dry_run" ? "Dry run: not called." : ""),
        candidatesTable(done.candidates || [], done.function),
        done.code ? h("details", { class: "definition" }, h("summary", {}, "The same call as code"),
          Object.entries(done.code).map(([language, code]) => [h("h5", {}, language), h("pre", { class: "code" }, code)])) : null,
        h("details", { class: "raw" }, h("summary", {}, "Raw JSON"), h("pre", {}, pretty(done))));
    } catch (error) {
      output.replaceChildren(error instanceof ApiError
        ? errorView(error.error, error.status)
        : h("p", { role: "alert" }, `The gateway did not answer: ${error.message}`));
    }
  });
}
