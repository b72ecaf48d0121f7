// Ask: questions over the library or selected documents; streamed answers with citation links,
// support status and confidence; the agent graph's steps with timings; a kept conversation.
import { call, stream, streamError } from "./api.js";
import { clear, describe, docHref, el, enumLabel, fmtMs } from "./ui.js";
import { selectedDocs } from "./library.js";

const HISTORY_KEY = "docuthinker.conversation";
const MAX_TURNS = 30;

function loadHistory() {
  try {
    return JSON.parse(localStorage.getItem(HISTORY_KEY) || "[]");
  } catch {
    return [];
  }
}

function saveHistory(turns) {
  localStorage.setItem(HISTORY_KEY, JSON.stringify(turns.slice(-MAX_TURNS)));
}

export function citationHref(c) {
  return docHref(c.document_id, {
    page: c.page || "",
    start: c.char_start,
    end: c.char_end,
    sheet: c.sheet_name || "",
    rows: c.row_start ? `${c.row_start}-${c.row_end}` : "",
    heading: (c.heading_path || []).join(" › "),
    marker: c.marker,
  });
}

/** The answer text with each [n] marker turned into a link to its cited span. */
function answerNodes(text, citations) {
  const byMarker = new Map((citations || []).map((c) => [String(c.marker), c]));
  const out = [];
  let last = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    out.push(text.slice(last, match.index));
    const c = byMarker.get(match[1]);
    out.push(c
      ? el("a", { class: "marker", href: citationHref(c), title: `${c.filename}${c.page ? `, page ${c.page}` : ""}`, dataset: { marker: c.marker } }, `[${match[1]}]`)
      : match[0]);
    last = match.index + match[0].length;
  }
  out.push(text.slice(last));
  return out;
}

function supportBadge(status) {
  const label = enumLabel(status, "SUPPORT_STATUS_") || "pending";
  return el("span", { class: `badge support-${label}`, "data-testid": "support" }, label);
}

function turnView(turn) {
  const answer = turn.answer || {};
  const citations = answer.citations || turn.citations || [];
  const text = answer.answer ?? turn.text ?? "";
  const steps = turn.steps || [];
  return el("article", { class: "turn", dataset: { state: turn.state, ttftMs: turn.ttftMs ?? "" } },
    el("div", { class: "question" }, el("span", { class: "who" }, "You"), turn.question,
      el("span", { class: "muted small" }, ` · ${turn.agent ? "agent" : "answer"} · ${turn.scope}`)),
    el("div", { class: "answer" },
      el("p", { class: "answer-text", "data-testid": "answer" }, answerNodes(text, citations)),
      turn.state === "streaming" ? el("span", { class: "spinner", role: "status" }, el("span", { class: "dot", "aria-hidden": "true" }), " answering…") : null,
      turn.error ? el("div", { class: "error", role: "alert" }, turn.error) : null,
      turn.state === "done" ? el("div", { class: "meta" }, supportBadge(answer.support_status),
        answer.confidence_note ? el("span", { class: "confidence", "data-testid": "confidence" }, answer.confidence_note) : null,
        turn.ttftMs !== undefined ? el("span", { class: "muted small" }, `first token after ${fmtMs(turn.ttftMs)}`) : null,
        answer.engine ? el("span", { class: "muted small" }, `${answer.engine.provider || ""} ${answer.engine.model || ""}`) : null) : null,
      steps.length ? el("ol", { class: "steps", "aria-label": "Agent steps" },
        steps.map((s) => el("li", {}, el("strong", {}, s.node), el("span", { class: "muted" }, ` ${fmtMs(s.duration_ms)}`), s.summary ? el("div", { class: "small" }, s.summary) : null))) : null,
      citations.length ? el("ol", { class: "citations", "aria-label": "Citations" },
        citations.map((c) => el("li", { value: c.marker },
          el("a", { href: citationHref(c), class: "cite-link", dataset: { marker: c.marker, documentId: c.document_id, charStart: c.char_start, charEnd: c.char_end, page: c.page } },
            `${c.filename}${c.page ? `, p. ${c.page}` : ""}${c.sheet_name ? `, ${c.sheet_name}` : ""}${c.row_start ? ` rows ${c.row_start}-${c.row_end}` : ""}`),
          el("blockquote", { class: "excerpt" }, c.excerpt)))) : null));
}

export function render(main) {
  const turns = loadHistory().filter((t) => t.state === "done" || t.state === "failed");
  let docs = [];
  const controller = new AbortController();
  const log = el("div", { class: "conversation", "aria-live": "polite", "data-testid": "conversation" });
  const question = el("textarea", { id: "question", rows: "2", placeholder: "Ask about your documents…", required: true });
  const agent = el("input", { type: "checkbox", id: "agent-mode" });
  const scopeAll = el("input", { type: "radio", name: "scope", id: "scope-all", value: "all", checked: true });
  const scopeSome = el("input", { type: "radio", name: "scope", id: "scope-some", value: "some" });
  const picker = el("fieldset", { class: "picker", hidden: true }, el("legend", {}, "Documents to ask"));
  const submit = el("button", { type: "submit" }, "Ask");
  const form = el("form", { class: "card ask-form" },
    el("label", { for: "question" }, "Question"), question,
    el("div", { class: "options" },
      el("span", {}, scopeAll, el("label", { for: "scope-all" }, " Whole library")),
      el("span", {}, scopeSome, el("label", { for: "scope-some" }, " Selected documents")),
      el("span", {}, agent, el("label", { for: "agent-mode" }, " Agent mode (planner → retriever → reasoner → validator)"))),
    picker,
    el("div", { class: "row" }, submit, el("button", { type: "button", class: "secondary", onclick: () => { turns.length = 0; saveHistory(turns); draw(); } }, "Clear conversation")));

  clear(main, el("h1", {}, "Ask"), form, log);

  const draw = () => {
    clear(log, turns.length ? [...turns].reverse().map(turnView) : el("p", { class: "muted" }, "No questions yet."));
  };
  draw();

  const initial = new Set(selectedDocs());
  if (initial.size) {
    scopeSome.checked = true;
    picker.hidden = false;
  }
  [scopeAll, scopeSome].forEach((r) => r.addEventListener("change", () => { picker.hidden = !scopeSome.checked; }));
  call("/v1/documents?page_size=100", { signal: controller.signal }).then((page) => {
    docs = (page.documents || []).filter((d) => d.status === "DOCUMENT_STATUS_READY");
    picker.append(...(docs.length ? docs.map((d) => el("label", { class: "pick" },
      el("input", { type: "checkbox", value: d.document_id, checked: initial.has(d.document_id) }), ` ${d.filename}`)) : [el("p", { class: "muted" }, "No ready documents.")]));
  }).catch((error) => {
    if (error.name !== "AbortError") picker.append(el("div", { class: "error" }, describe(error)));
  });

  question.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      form.requestSubmit();
    }
  });

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = question.value.trim();
    if (!text) return;
    const ids = scopeSome.checked ? [...picker.querySelectorAll("input:checked")].map((i) => i.value) : [];
    const turn = { question: text, agent: agent.checked, state: "streaming", text: "", citations: [], steps: [],
      scope: ids.length ? `${ids.length} document${ids.length > 1 ? "s" : ""}` : "whole library" };
    turns.push(turn);
    draw();
    submit.disabled = true;
    question.value = "";
    const started = performance.now();
    try {
      const body = { question: text, document_ids: ids };
      if (turn.agent) {
        await stream("/v1/agents/query:stream", body, (m) => {
          if (m.node) turn.steps.push(m.node.step);
          else if (m.done) {
            turn.answer = m.done.answer;
            turn.steps = m.done.execution_summary?.steps?.length ? m.done.execution_summary.steps : turn.steps;
            turn.state = "done";
          } else if (m.error) throw streamError(m.error);
          draw();
        }, { signal: controller.signal });
      } else {
        await stream("/v1/query:stream", body, (m) => {
          if (m.answer_delta !== undefined) {
            if (turn.ttftMs === undefined) turn.ttftMs = performance.now() - started;
            turn.text += m.answer_delta;
          } else if (m.citation) turn.citations.push(m.citation);
          else if (m.done) {
            turn.answer = m.done;
            turn.state = "done";
          } else if (m.error) throw streamError(m.error);
          draw();
        }, { signal: controller.signal });
      }
      if (turn.state !== "done") throw new Error("the answer stream ended without its final message");
    } catch (error) {
      if (error.name === "AbortError") return;
      turn.state = "failed";
      turn.error = describe(error);
    } finally {
      submit.disabled = false;
    }
    saveHistory(turns);
    draw();
  });

  return () => controller.abort();
}
