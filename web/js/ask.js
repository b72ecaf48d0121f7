// Ask: questions over the library or selected documents; streamed answers with citation links,
// support status and confidence; the agent graph's steps with timings; a kept conversation.
import { ApiError, call, sendBytes, stream, streamError } from "./api.js";
import { clear, describe, docHref, el, enumLabel, fmtClock, fmtMs } from "./ui.js";
import { selectedDocs } from "./library.js";

const HISTORY_KEY = "docuthinker.conversation";
const MAX_TURNS = 30;
// The service refuses spoken questions over DOCUTHINKER_SPEECH_MAX_QUESTION_SECONDS (60 s by default).
const MAX_RECORDING_S = 60;

/** A citation of a recording (audio or video) carries the time it was said; 0 is omitted by JSON. */
export function isTimed(c) {
  return Number(c.end_seconds || 0) > 0;
}

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
    t0: isTimed(c) ? Number(c.start_seconds || 0).toFixed(2) : "",
    t1: isTimed(c) ? Number(c.end_seconds).toFixed(2) : "",
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
      ? el("a", { class: "marker", href: citationHref(c), title: `${c.filename}${c.page ? `, page ${c.page}` : ""}${isTimed(c) ? ` at ${fmtClock(c.start_seconds)}` : ""}`, dataset: { marker: c.marker } }, `[${match[1]}]`)
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
  return el("article", { class: "turn", dataset: { state: turn.state, ttftMs: turn.ttftMs ?? "", spoken: turn.spoken ? "true" : null, latencyMs: turn.latencyMs ?? null } },
    el("div", { class: "question" }, el("span", { class: "who" }, turn.spoken ? "You, spoken" : "You"),
      turn.spoken ? el("span", { "data-testid": "transcript" }, turn.question) : turn.question,
      el("span", { class: "muted small" }, ` · ${turn.spoken ? "voice" : turn.agent ? "agent" : "answer"} · ${turn.scope}`),
      turn.heard ? el("span", { class: "muted small" }, ` · ${turn.heard}`) : null),
    el("div", { class: "answer" },
      el("p", { class: "answer-text", "data-testid": "answer" }, answerNodes(text, citations)),
      turn.state === "streaming" ? el("span", { class: "spinner", role: "status" }, el("span", { class: "dot", "aria-hidden": "true" }), " answering…") : null,
      turn.error ? el("div", { class: "error", role: "alert" }, turn.error) : null,
      turn.state === "done" ? el("div", { class: "meta" }, supportBadge(answer.support_status),
        answer.confidence_note ? el("span", { class: "confidence", "data-testid": "confidence" }, answer.confidence_note) : null,
        turn.ttftMs !== undefined ? el("span", { class: "muted small" }, `first token after ${fmtMs(turn.ttftMs)}`) : null,
        turn.latencyMs !== undefined ? el("span", { class: "muted small" }, `answered ${fmtMs(turn.latencyMs)} after the recording stopped`) : null,
        answer.engine ? el("span", { class: "muted small" }, `${answer.engine.provider || ""} ${answer.engine.model || ""}`) : null) : null,
      steps.length ? el("ol", { class: "steps", "aria-label": "Agent steps" },
        steps.map((s) => el("li", {}, el("strong", {}, s.node), el("span", { class: "muted" }, ` ${fmtMs(s.duration_ms)}`), s.summary ? el("div", { class: "small" }, s.summary) : null))) : null,
      citations.length ? el("ol", { class: "citations", "aria-label": "Citations" },
        citations.map((c) => el("li", { value: c.marker },
          el("a", { href: citationHref(c), class: "cite-link", dataset: { marker: c.marker, documentId: c.document_id, charStart: c.char_start, charEnd: c.char_end, page: c.page,
            startSeconds: isTimed(c) ? Number(c.start_seconds || 0) : null, endSeconds: isTimed(c) ? Number(c.end_seconds) : null } },
            `${c.filename}${c.page ? `, p. ${c.page}` : ""}${c.sheet_name ? `, ${c.sheet_name}` : ""}${c.row_start ? ` rows ${c.row_start}-${c.row_end}` : ""}${isTimed(c) ? ` at ${fmtClock(c.start_seconds)}–${fmtClock(c.end_seconds)}` : ""}`),
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
  const mic = el("button", { type: "button", class: "secondary mic", "data-testid": "mic", "aria-pressed": "false",
    title: `Ask by voice: records from the microphone until you press it again (at most ${MAX_RECORDING_S} s)` }, "● Ask by voice");
  const micStatus = el("span", { class: "mic-status muted small", role: "status", "aria-live": "polite", "data-testid": "mic-status" });
  const form = el("form", { class: "card ask-form" },
    el("label", { for: "question" }, "Question"), question,
    el("div", { class: "options" },
      el("span", {}, scopeAll, el("label", { for: "scope-all" }, " Whole library")),
      el("span", {}, scopeSome, el("label", { for: "scope-some" }, " Selected documents")),
      el("span", {}, agent, el("label", { for: "agent-mode" }, " Agent mode (planner → retriever → reasoner → validator)"))),
    picker,
    el("div", { class: "row" }, submit, mic, micStatus, el("button", { type: "button", class: "secondary", onclick: () => { turns.length = 0; saveHistory(turns); draw(); } }, "Clear conversation")));

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

  const chosenIds = () => (scopeSome.checked ? [...picker.querySelectorAll("input:checked")].map((i) => i.value) : []);
  const scopeLabel = (ids) => (ids.length ? `${ids.length} document${ids.length > 1 ? "s" : ""}` : "whole library");

  // -- Ask by voice: MediaRecorder (WebM/Opus) until the button is pressed again, then /v1/query:spoken.
  const rec = { recorder: null, stream: null, chunks: [], timer: 0, startedAt: 0 };
  const setRecording = (on) => {
    mic.classList.toggle("recording", on);
    mic.setAttribute("aria-pressed", on ? "true" : "false");
    mic.textContent = on ? "■ Stop recording" : "● Ask by voice";
    mic.dataset.state = on ? "recording" : "idle";
  };
  const stopTracks = () => {
    clearInterval(rec.timer);
    if (rec.stream) rec.stream.getTracks().forEach((t) => t.stop());
    rec.stream = null;
  };
  async function startRecording() {
    if (!navigator.mediaDevices?.getUserMedia || typeof MediaRecorder === "undefined") {
      micStatus.textContent = "This browser cannot record audio (no MediaRecorder): type the question instead.";
      return;
    }
    try {
      rec.stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    } catch (error) {
      micStatus.textContent = microphoneError(error);
      micStatus.classList.add("error-text");
      return;
    }
    micStatus.classList.remove("error-text");
    const type = ["audio/webm;codecs=opus", "audio/webm", "audio/ogg;codecs=opus"].find((t) => MediaRecorder.isTypeSupported(t)) || "";
    rec.recorder = new MediaRecorder(rec.stream, type ? { mimeType: type } : {});
    rec.chunks = [];
    rec.recorder.addEventListener("dataavailable", (e) => { if (e.data.size) rec.chunks.push(e.data); });
    rec.recorder.addEventListener("stop", () => {
      stopTracks();
      if (controller.signal.aborted) return; // the page was left while recording
      const blob = new Blob(rec.chunks, { type: (rec.recorder.mimeType || "audio/webm").split(";")[0] });
      rec.recorder = null;
      setRecording(false);
      askSpoken(blob);
    });
    rec.recorder.start(250);
    rec.startedAt = performance.now();
    setRecording(true);
    const tick = () => {
      const s = (performance.now() - rec.startedAt) / 1000;
      micStatus.textContent = `Recording ${fmtClock(s)} (press again to stop)`;
      if (s >= MAX_RECORDING_S && rec.recorder?.state === "recording") rec.recorder.stop();
    };
    tick();
    rec.timer = setInterval(tick, 250);
  }
  mic.addEventListener("click", () => {
    if (rec.recorder?.state === "recording") rec.recorder.stop();
    else if (!rec.recorder) startRecording();
  });

  async function askSpoken(blob) {
    const stopped = performance.now();
    const ids = chosenIds();
    const turn = { question: "(transcribing the recording…)", spoken: true, state: "streaming", citations: [], steps: [], scope: scopeLabel(ids) };
    turns.push(turn);
    draw();
    mic.disabled = true;
    micStatus.textContent = `Sent ${fmtClock((stopped - rec.startedAt) / 1000)} of audio; transcribing and answering…`;
    try {
      if (!blob.size) throw new Error("The recording is empty: the microphone gave no sound. Check the input device and try again.");
      const q = new URLSearchParams(ids.map((id) => ["document_ids", id]));
      const reply = await sendBytes(`/v1/query:spoken${ids.length ? `?${q}` : ""}`, blob, { signal: controller.signal });
      turn.question = reply.transcript || "(nothing heard)";
      turn.heard = `heard ${Number(reply.audio_seconds || 0).toFixed(1)} s${reply.language ? `, ${reply.language}` : ""}${reply.speech_model ? `, ${reply.speech_model}` : ""}`;
      turn.answer = reply.answer || {};
      turn.latencyMs = performance.now() - stopped;
      turn.state = "done";
      micStatus.textContent = "";
    } catch (error) {
      if (error.name === "AbortError") return;
      turn.state = "failed";
      turn.question = "(spoken question)";
      turn.error = spokenError(error);
      micStatus.textContent = "";
    } finally {
      mic.disabled = false;
    }
    saveHistory(turns);
    draw();
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const text = question.value.trim();
    if (!text) return;
    const ids = chosenIds();
    const turn = { question: text, agent: agent.checked, state: "streaming", text: "", citations: [], steps: [],
      scope: scopeLabel(ids) };
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

  return () => {
    controller.abort();
    if (rec.recorder?.state === "recording") rec.recorder.stop();
    stopTracks();
  };
}

/** Why the microphone could not be opened, in words. */
function microphoneError(error) {
  switch (error && error.name) {
    case "NotAllowedError":
    case "SecurityError":
      return "Microphone permission was refused: allow this site to use the microphone (the icon in the address bar), then press the button again.";
    case "NotFoundError":
    case "OverconstrainedError":
      return "No microphone was found: connect one (or pick an input device in the system settings) and try again.";
    case "NotReadableError":
      return "The microphone is in use by another program or could not be started.";
    default:
      return `The microphone could not be opened: ${describe(error)}`;
  }
}

const SPOKEN_REASONS = {
  NO_SPEECH: "No speech was heard in the recording (silence or noise only). Speak closer to the microphone and try again.",
  EMPTY_MEDIA: "The recording was empty. Check the microphone and try again.",
  MEDIA_TOO_LONG: `The recording is too long for a spoken question (at most ${MAX_RECORDING_S} s by default). Ask a shorter question.`,
  MEDIA_TOO_LARGE: "The recording is too large to send. Ask a shorter question.",
  CORRUPT_FILE: "The recording could not be decoded (the browser's audio was unreadable). Try again, or type the question.",
  NO_AUDIO_TRACK: "The recording holds no audio track. Try again, or type the question.",
  SPEECH_UNAVAILABLE: "Speech recognition is not available on this server (speech is off or its model is missing). Type the question instead.",
};

/** A failed spoken question, in words: the reason's sentence, then the server's own message. */
function spokenError(error) {
  const reason = error instanceof ApiError ? error.reason() : "";
  return SPOKEN_REASONS[reason] ? `${SPOKEN_REASONS[reason]} (${reason}: ${error.message})` : describe(error);
}
