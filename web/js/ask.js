// Ask: a conversation kept on the server for the signed-in user (list, rename, delete in the sidebar), newest
// turn at the bottom; each question is resolved against the earlier ones there (follow-ups) and answered with
// its short answer first, then the supporting quote and the citations (previewed in place). Agent mode and
// spoken questions are answered too, but not kept in the conversation.
import { ApiError, call, sendBytes, stream, streamError } from "./api.js";
import { Previews, citationHref, isTimed, quote, shortAnswer, where } from "./citations.js";
import { clear, describe, el, enumLabel, errorBox, fmtClock, fmtDate, fmtMs, plural } from "./ui.js";
import { selectedDocs } from "./library.js";

export { citationHref, isTimed };

const CURRENT_KEY = "docuthinker.conversation";
// The service refuses spoken questions over DOCUTHINKER_SPEECH_MAX_QUESTION_SECONDS (60 s by default).
const MAX_RECORDING_S = 60;

/** The answer text with each [n] marker turned into a link to its cited span (previewed in place). */
function answerNodes(text, citations, previews) {
  const byMarker = new Map((citations || []).map((c) => [String(c.marker), c]));
  const out = [];
  let last = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    out.push(text.slice(last, match.index));
    const c = byMarker.get(match[1]);
    out.push(c ? previews.attach(el("a", { class: "marker", href: citationHref(c), "aria-label": `citation ${c.marker}: ${where(c)}`,
      dataset: { marker: c.marker } }, `[${match[1]}]`), c) : match[0]);
    last = match.index + match[0].length;
  }
  out.push(text.slice(last));
  return out;
}

function supportBadge(status) {
  const label = enumLabel(status, "SUPPORT_STATUS_") || "pending";
  return el("span", { class: `badge support-${label}`, "data-testid": "support" }, label);
}

function citationLink(c, previews) {
  return previews.attach(el("a", { href: citationHref(c), class: "cite-link", dataset: {
    marker: c.marker, documentId: c.document_id, charStart: c.char_start, charEnd: c.char_end, page: c.page,
    answerStart: c.answer_char_start ?? null, answerEnd: c.answer_char_end ?? null,
    startSeconds: isTimed(c) ? Number(c.start_seconds || 0) : null, endSeconds: isTimed(c) ? Number(c.end_seconds) : null } },
  where(c)), c);
}

function turnView(turn, previews, retry) {
  const answer = turn.answer || {};
  const citations = answer.citations || turn.citations || [];
  const text = answer.answer ?? turn.text ?? "";
  const steps = turn.steps || [];
  const short = turn.state === "done" ? shortAnswer(answer) : null;
  return el("article", { class: "turn", dataset: { state: turn.state, ttftMs: turn.ttftMs ?? "", spoken: turn.spoken ? "true" : null,
    latencyMs: turn.latencyMs ?? null, kept: turn.kept ? "true" : null } },
    el("div", { class: "question" }, el("span", { class: "who" }, turn.spoken ? "You, spoken" : "You"),
      turn.spoken ? el("span", { "data-testid": "transcript" }, turn.question) : turn.question,
      el("span", { class: "muted small" }, ` · ${turn.spoken ? "voice" : turn.agent ? "agent" : "answer"} · ${turn.scope || "whole library"}`),
      turn.heard ? el("span", { class: "muted small" }, ` · ${turn.heard}`) : null,
      turn.resolved ? el("p", { class: "resolved", "data-testid": "resolved" }, `Read as: “${turn.resolved}”`) : null),
    el("div", { class: "answer" },
      short ? el("p", { class: "short-answer", "data-testid": "short-answer" }, short.text) : null,
      short ? el("blockquote", { class: "support", "data-testid": "supporting-quote" }, quote(short.citation),
        el("span", { class: "where muted" }, "— ", citationLink(short.citation, previews))) : null,
      el("p", { class: short ? "answer-text muted small" : "answer-text", "data-testid": "answer" }, answerNodes(text, citations, previews)),
      turn.state === "streaming" ? el("span", { class: "spinner", role: "status" }, el("span", { class: "dot", "aria-hidden": "true" }), " answering…") : null,
      turn.error ? errorBox(turn.error, retry) : null,
      turn.state === "done" ? el("div", { class: "meta" }, supportBadge(answer.support_status),
        answer.confidence_note ? el("span", { class: "confidence", "data-testid": "confidence" }, answer.confidence_note) : null,
        turn.ttftMs !== undefined ? el("span", { class: "muted small" }, `first token after ${fmtMs(turn.ttftMs)}`) : null,
        turn.latencyMs !== undefined ? el("span", { class: "muted small" }, `answered ${fmtMs(turn.latencyMs)} after the recording stopped`) : null,
        answer.engine ? el("span", { class: "muted small" }, `${answer.engine.provider || ""} ${answer.engine.model || ""}`) : null,
        turn.kept ? null : el("span", { class: "muted small" }, "not kept in the conversation")) : null,
      steps.length ? el("ol", { class: "steps", "aria-label": "Agent steps" },
        steps.map((st) => el("li", {}, el("strong", {}, st.node), el("span", { class: "muted" }, ` ${fmtMs(st.duration_ms)}`), st.summary ? el("div", { class: "small" }, st.summary) : null))) : null,
      citations.length ? el("ol", { class: "citations", "aria-label": "Citations" },
        citations.map((c) => el("li", { value: c.marker }, citationLink(c, previews), el("blockquote", { class: "excerpt" }, quote(c))))) : null));
}

/** A stored turn (GET /v1/conversations/{id}) as the page draws it. */
function storedTurn(t) {
  return { question: t.question, resolved: t.resolved_question || "", answer: t.answer || {}, state: "done", kept: true };
}

export function render(main, route) {
  const state = { conversationId: route?.params?.get("c") || sessionStorage.getItem(CURRENT_KEY) || "", conversations: [] };
  const turns = [];
  let docs = [];
  const controller = new AbortController();
  const log = el("div", { class: "conversation", "aria-live": "polite", "data-testid": "conversation" });
  const chatList = el("ul", { "aria-label": "Your conversations" });
  const chatTitle = el("h2", { id: "chat-title", class: "chat-title" }, "New conversation");
  const chatHead = el("div", { class: "row chat-head" }, chatTitle);
  const question = el("textarea", { id: "question", rows: "2", "data-skip-target": "true", placeholder: "Ask about your documents… (a follow-up such as “when did she write it?” is read against the questions before it)", required: true });
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
    el("div", { class: "row" }, submit, mic, micStatus));
  const newChat = el("button", { type: "button", class: "secondary", "data-testid": "new-conversation" }, "New conversation");
  const sidebar = el("aside", { class: "card chats", "aria-labelledby": "chats-h" }, el("h2", { id: "chats-h" }, "Conversations"), newChat, chatList);

  clear(main, el("h1", {}, "Ask"),
    el("div", { class: "chat-grid" }, sidebar, el("section", { class: "chat-main", "aria-labelledby": "chat-title" }, chatHead, log, form)));
  const previews = new Previews(main);

  const draw = () => {
    clear(log, turns.length ? turns.map((t) => turnView(t, previews, t.retry || null))
      : el("p", { class: "muted" }, "No questions yet: ask one below. Follow-ups are read against the earlier questions."));
  };
  const reveal = () => log.lastElementChild?.scrollIntoView({ block: "nearest" });

  const renameButton = el("button", { type: "button", class: "secondary small", hidden: true }, "Rename");
  const deleteButton = el("button", { type: "button", class: "danger small", hidden: true }, "Delete");
  const current = () => state.conversations.find((c) => c.conversation_id === state.conversationId);
  renameButton.addEventListener("click", async () => {
    const c = current();
    const title = c ? prompt("New name of the conversation", c.title || "") : null;
    if (!title || !title.trim()) return;
    try {
      await call(`/v1/conversations/${encodeURIComponent(c.conversation_id)}`, { method: "PATCH", body: { title: title.trim() } });
      await loadList();
    } catch (error) {
      chatHead.append(errorBox(error));
    }
  });
  deleteButton.addEventListener("click", async () => {
    const c = current();
    if (!c || !confirm(`Delete the conversation “${c.title}”? Its questions and answers are removed.`)) return;
    try {
      await call(`/v1/conversations/${encodeURIComponent(c.conversation_id)}`, { method: "DELETE" });
      openConversation("");
    } catch (error) {
      chatHead.append(errorBox(error));
    }
  });
  chatHead.append(renameButton, deleteButton);

  function drawList() {
    const c = current();
    chatTitle.textContent = c ? c.title || "Untitled conversation" : "New conversation";
    renameButton.hidden = deleteButton.hidden = !c;
    renameButton.setAttribute("aria-label", c ? `Rename “${c.title}”` : "Rename");
    deleteButton.setAttribute("aria-label", c ? `Delete “${c.title}”` : "Delete");
    // One Tab stop per conversation: its actions are beside the open conversation's title.
    clear(chatList, state.conversations.length ? state.conversations.map((item) =>
      el("li", { "aria-current": item.conversation_id === state.conversationId ? "true" : null, dataset: { conversationId: item.conversation_id } },
        el("a", { href: `#/ask?c=${encodeURIComponent(item.conversation_id)}`, title: item.title }, item.title || "Untitled"),
        el("span", { class: "when" }, `${plural(item.turn_count, "question")} · ${fmtDate(item.update_time)}`)))
      : el("li", { class: "muted small" }, "None yet."));
  }

  async function loadList() {
    try {
      state.conversations = (await call("/v1/conversations?page_size=100", { signal: controller.signal })).conversations || [];
    } catch (error) {
      if (error.name === "AbortError") return;
      clear(chatList, el("li", {}, errorBox(error, loadList)));
      return;
    }
    drawList();
  }

  function remember(id) {
    state.conversationId = id;
    if (id) sessionStorage.setItem(CURRENT_KEY, id);
    else sessionStorage.removeItem(CURRENT_KEY);
    history.replaceState(null, "", id ? `#/ask?c=${encodeURIComponent(id)}` : "#/ask");
  }

  async function openConversation(id) {
    remember(id);
    turns.length = 0;
    draw();
    if (id) {
      try {
        const body = await call(`/v1/conversations/${encodeURIComponent(id)}`, { signal: controller.signal });
        turns.push(...(body.turns || []).map(storedTurn));
        draw();
        reveal();
      } catch (error) {
        if (error.name === "AbortError") return;
        if (error instanceof ApiError && error.status === 404) {
          remember(""); // gone (deleted elsewhere): start afresh
        } else {
          log.append(errorBox(error, () => openConversation(id)));
        }
      }
    }
    await loadList();
  }

  newChat.addEventListener("click", () => {
    openConversation("");
    question.focus();
  });

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
  openConversation(state.conversationId);

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
    reveal();
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
    draw();
    reveal();
  }

  async function ask(text, ids, asAgent, turn) {
    const started = performance.now();
    submit.disabled = true;
    try {
      if (asAgent) {
        await stream("/v1/agents/query:stream", { question: text, document_ids: ids }, (m) => {
          if (m.node) turn.steps.push(m.node.step);
          else if (m.done) {
            turn.answer = m.done.answer;
            turn.steps = m.done.execution_summary?.steps?.length ? m.done.execution_summary.steps : turn.steps;
            turn.state = "done";
          } else if (m.error) throw streamError(m.error, "/v1/agents/query:stream");
          draw();
        }, { signal: controller.signal });
      } else {
        const path = `/v1/conversations/${encodeURIComponent(state.conversationId || "-")}:ask`;
        await stream(path, { question: text, document_ids: ids }, (m) => {
          if (m.conversation) {
            if (m.conversation.conversation_id !== state.conversationId) {
              remember(m.conversation.conversation_id);
              loadList();
            }
          } else if (m.resolved) {
            turn.resolved = m.resolved.rewritten ? m.resolved.resolved : "";
          } else if (m.answer_delta !== undefined) {
            if (turn.ttftMs === undefined) turn.ttftMs = performance.now() - started;
            turn.text += m.answer_delta;
          } else if (m.citation) turn.citations.push(m.citation);
          else if (m.done) {
            turn.answer = m.done.answer || {};
            turn.kept = true;
            turn.state = "done";
          } else if (m.error) throw streamError(m.error, "/v1/query:stream");
          draw();
        }, { signal: controller.signal });
        loadList(); // the conversation moved to the top, its title set by the first question
      }
      if (turn.state !== "done") throw new Error("the answer stream ended without its final message");
    } catch (error) {
      if (error.name === "AbortError") return;
      turn.state = "failed";
      turn.error = error;
      turn.retry = () => {
        Object.assign(turn, { state: "streaming", text: "", citations: [], steps: [], error: null, retry: null, ttftMs: undefined });
        draw();
        ask(text, ids, asAgent, turn);
      };
    } finally {
      submit.disabled = false;
    }
    draw();
    reveal();
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = question.value.trim();
    if (!text) return;
    const ids = chosenIds();
    const turn = { question: text, agent: agent.checked, state: "streaming", text: "", citations: [], steps: [], scope: scopeLabel(ids) };
    turns.push(turn);
    draw();
    reveal();
    question.value = "";
    ask(text, ids, agent.checked, turn);
  });

  return () => {
    controller.abort();
    previews.close();
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
