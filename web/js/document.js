// Document view: the original file (PDF pages drawn by pdf.js), the extracted text with a cited
// span marked, and the NLP analyses, each loaded on demand.
import { call, fetchBytes } from "./api.js";
import { clear, el, enumLabel, errorBox, fmtBytes, fmtClock, fmtDate, loadInto, pagesLabel, plural, spinner } from "./ui.js";
import { drawBoxes, renderPdf } from "./pdf_view.js";

const TEXT_TYPES = new Set(["text", "markdown", "html"]);
// Shown as HTML the server renders (GET :preview), in a frame that runs no script.
const PREVIEWED = new Set(["docx", "xlsx", "xls", "csv", "tsv"]);
const MEDIA_TYPES = new Set(["audio", "video"]);

/**
 * A recording's player (<audio>, or <video> for a video) on its original bytes; with a cited span
 * (t0..t1 seconds) it starts at t0, plays the span and pauses at t1, and "play from m:ss" replays it.
 */
function mediaPlayer(url, kind, filename, span) {
  const player = el(kind, { controls: true, preload: "auto", src: url, "data-testid": "player", "aria-label": `The recording ${filename}` });
  const box = el("div", { class: "player" }, player);
  if (!span) return box;
  let stopAt = span.end;
  const playSpan = () => {
    stopAt = span.end;
    player.currentTime = span.start;
    player.play().catch(() => {}); // autoplay may be refused until the page is clicked: the position is set anyway
  };
  player.addEventListener("seeked", () => {
    if (!player.dataset.seekedTo) player.dataset.seekedTo = player.currentTime.toFixed(3); // where the span was set
  });
  player.addEventListener("timeupdate", () => {
    if (stopAt && player.currentTime >= stopAt) {
      stopAt = 0;
      player.pause();
    }
  });
  player.addEventListener("loadedmetadata", playSpan, { once: true });
  const button = el("button", { type: "button", class: "secondary small", "data-testid": "play-from" }, `▶ Play from ${fmtClock(span.start)}`);
  button.addEventListener("click", playSpan);
  box.append(el("div", { class: "row" }, button,
    el("span", { class: "muted small" }, `cited span ${fmtClock(span.start)}–${fmtClock(span.end)} (${(span.end - span.start).toFixed(1)} s)`)));
  return box;
}

/** Which section a citation points at: same page, sheet and heading path, else the first long enough. */
export function findSection(sections, { page, sheet, heading, end }) {
  const fits = (s) => s.text.length >= end;
  const same = sections.find((s) => (!page || s.page === page) && (!sheet || s.sheet_name === sheet)
    && (!heading || (s.heading_path || []).join(" › ") === heading) && fits(s));
  return same || sections.find((s) => (!page || s.page === page) && fits(s)) || null;
}

function sectionTitle(s) {
  const parts = [];
  if (s.page) parts.push(`Page ${s.page}`);
  if (s.sheet_name) parts.push(`Sheet ${s.sheet_name}`);
  if ((s.heading_path || []).length) parts.push(s.heading_path.join(" › "));
  return parts.join(" · ") || "Text";
}

const CELL_SEPARATOR = " | ";

/** A section's lines with their offsets, when every line is a table row ("cell | cell"); else null. */
export function tableRows(text) {
  const rows = [];
  let at = 0;
  for (const line of text.split("\n")) {
    if (line.trim()) rows.push({ line, start: at });
    at += line.length + 1;
  }
  if (rows.length < 2 || !rows.every((r) => r.line.includes(CELL_SEPARATOR))) return null;
  return rows.map(({ line, start }) => {
    const cells = [];
    let from = 0;
    for (const part of line.split(CELL_SEPARATOR)) {
      cells.push({ text: part, start: start + from, end: start + from + part.length });
      from += part.length + CELL_SEPARATOR.length;
    }
    return cells;
  });
}

/** A table section as a table; the cells the cited span touches are marked (the touched text in <mark>). */
function tableView(rows, span) {
  let first = true;
  const cell = (c, tag) => {
    const hit = span && c.start < span.end && c.end > span.start;
    if (!hit) return el(tag, {}, c.text);
    const a = Math.max(span.start, c.start) - c.start;
    const b = Math.min(span.end, c.end) - c.start;
    const mark = el("mark", { class: "cited", "data-testid": "cited-cell", id: first ? "cited" : null, tabindex: first ? "-1" : null }, c.text.slice(a, b));
    first = false;
    return el(tag, { class: "cited-cell" }, c.text.slice(0, a), mark, c.text.slice(b));
  };
  const [head, ...body] = rows;
  return el("div", { class: "table-box", tabindex: "0", role: "region", "aria-label": "Table" }, el("table", { class: "sheet" },
    el("thead", {}, el("tr", {}, head.map((c) => cell(c, "th")))),
    el("tbody", {}, body.map((r) => el("tr", {}, r.map((c) => cell(c, "td")))))));
}

function textPanel(sections, cite) {
  const target = cite ? findSection(sections, cite) : null;
  return el("div", { class: "sections" }, sections.map((s) => {
    const rows = tableRows(s.text);
    if (rows) {
      return el("section", { class: s === target ? "section target" : "section" }, el("h3", {}, sectionTitle(s)),
        tableView(rows, s === target ? cite : null));
    }
    const body = el("pre", { class: "section-text" });
    if (s === target) {
      body.append(s.text.slice(0, cite.start),
        el("mark", { id: "cited", class: "cited", "data-testid": "cited-span", tabindex: "-1" }, s.text.slice(cite.start, cite.end)),
        s.text.slice(cite.end));
    } else {
      body.textContent = s.text;
    }
    return el("section", { class: s === target ? "section target" : "section" }, el("h3", {}, sectionTitle(s)), body);
  }));
}

const ANALYSES = [
  { id: "summary", label: "Summary", path: "/v1/nlp/summary", body: { style: "SUMMARY_STYLE_NARRATIVE" },
    view: (r) => el("p", {}, r.summary || (r.bullets || []).join(" ")) },
  { id: "key-ideas", label: "Key ideas", path: "/v1/nlp/key-ideas", view: (r) => list(r.ideas) },
  { id: "entities", label: "Entities", path: "/v1/nlp/entities",
    view: (r) => table(["Entity", "Label", "Count"], (r.entities || []).map((e) => [e.text, e.label, e.count])) },
  { id: "sentiment", label: "Sentiment", path: "/v1/nlp/sentiment",
    view: (r) => el("p", {}, el("span", { class: "badge" }, enumLabel(r.overall?.label, "SENTIMENT_LABEL_")),
      ` score ${Number(r.overall?.score || 0).toFixed(2)}, confidence ${Number(r.overall?.confidence || 0).toFixed(2)}`) },
  { id: "topics", label: "Topics", path: "/v1/nlp/topics",
    view: (r) => table(["Topic", "Weight"], (r.topics || []).map((t) => [t.name, Number(t.weight).toFixed(3)])) },
  { id: "analytics", label: "Analytics", path: "/v1/nlp/analytics",
    view: (r) => el("div", {}, table(["Measure", "Value"], [
      ["Words", r.words], ["Sentences", r.sentences], ["Paragraphs", r.paragraphs],
      ["Reading time", `${Number(r.reading_time_minutes || 0).toFixed(1)} min`],
      ["Flesch reading ease", Number(r.flesch_reading_ease || 0).toFixed(1)],
      ["Lexical diversity", Number(r.lexical_diversity || 0).toFixed(2)],
      ["Average sentence length", Number(r.average_sentence_length || 0).toFixed(1)]]),
    el("p", {}, "Top keywords: ", (r.top_keywords || []).map((k) => `${k.keyword} (${k.count})`).join(", "))) },
  { id: "discussion", label: "Discussion points", path: "/v1/nlp/discussion-points", generative: true, view: (r) => list(r.points) },
  { id: "recommendations", label: "Recommendations", path: "/v1/nlp/recommendations", generative: true,
    view: (r) => list((r.recommendations || []).map((x) => `${x.recommendation}${x.rationale ? ` (${x.rationale})` : ""} [${enumLabel(x.priority, "PRIORITY_")}]`)) },
];

function list(items) {
  return items && items.length ? el("ul", {}, items.map((i) => el("li", {}, i))) : el("p", { class: "muted" }, "Nothing found.");
}

function table(head, rows) {
  if (!rows.length) return el("p", { class: "muted" }, "Nothing found.");
  return el("table", {}, el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c ?? ""))))));
}

function engineNote(r) {
  return r && r.engine ? el("p", { class: "muted small" }, `engine: ${r.engine.provider || ""} ${r.engine.model || ""}`) : null;
}

export function render(main, route) {
  const id = route.parts[1];
  const p = route.params;
  const cite = p.has("start") ? {
    page: Number(p.get("page") || 0), sheet: p.get("sheet") || "", heading: p.get("heading") || "",
    start: Number(p.get("start")), end: Number(p.get("end")), marker: p.get("marker") || "",
    answerStart: p.has("as") ? Number(p.get("as")) : null, answerEnd: p.has("ae") ? Number(p.get("ae")) : null,
    rows: p.get("rows") || "",
  } : null;
  const timeSpan = p.has("t1") ? { start: Number(p.get("t0") || 0), end: Number(p.get("t1")) } : null;
  const urls = [];
  const state = { alive: true };
  const header = el("div", {}, spinner("Loading document"));
  // Scrolling boxes are focusable regions, so a keyboard can scroll them too.
  const original = el("div", { class: "original", "data-testid": "original", tabindex: "0", role: "region", "aria-label": "The original file" });
  const text = el("div", { class: "extracted", "data-testid": "extracted", tabindex: "0", role: "region", "aria-label": "The extracted text" });
  const analyses = el("section", { class: "card analyses", "aria-labelledby": "analyses-h" }, el("h2", { id: "analyses-h" }, "Analyses"));

  clear(main, header,
    el("div", { class: "doc-grid" },
      el("section", { class: "card", "aria-labelledby": "original-h" }, el("h2", { id: "original-h" }, "Original"), original),
      el("section", { class: "card", "aria-labelledby": "text-h" }, el("h2", { id: "text-h" }, cite ? `Extracted text · citation [${cite.marker}]` : "Extracted text"), text)),
    analyses);

  for (const a of ANALYSES) analyses.append(analysisBlock(id, a));
  analyses.append(rewriteBlock(id));

  call(`/v1/documents/${encodeURIComponent(id)}`).then(({ document: d }) => {
    if (!state.alive) return;
    const download = el("button", { type: "button", class: "secondary small" }, "Download original");
    download.addEventListener("click", async () => {
      try {
        const { type, data } = await fetchBytes(`/v1/documents/${encodeURIComponent(id)}:content`);
        const url = URL.createObjectURL(new Blob([data], { type }));
        urls.push(url);
        el("a", { href: url, download: d.filename }).click();
      } catch (error) {
        header.append(errorBox(error));
      }
    });
    clear(header, el("h1", {}, d.title && d.title !== d.filename ? d.title : d.filename),
      el("p", { class: "muted" }, `${d.filename} · ${d.file_type} · ${pagesLabel(d) === "—" ? "" : `${pagesLabel(d)} · `}${plural(d.chunk_count, "chunk")} · ${fmtBytes(d.size_bytes)} · ${enumLabel(d.status, "DOCUMENT_STATUS_")} · graph ${enumLabel(d.graph_sync, "GRAPH_SYNC_STATUS_")} · added ${fmtDate(d.create_time)} `, download),
      d.error_message ? el("div", { class: "error" }, d.error_message) : null);
    loadOriginal(d);
  }).catch((error) => clear(header, el("h1", {}, "Document"), errorBox(error, () => window.dispatchEvent(new HashChangeEvent("hashchange")))));

  const textLoaded = call(`/v1/documents/${encodeURIComponent(id)}/text`);
  loadInto(text, "Loading text", () => textLoaded, (r) => textPanel(r.sections || [], cite)).then(() => {
    const mark = text.querySelector("#cited");
    if (mark) mark.scrollIntoView({ block: "center" });
  });

  async function loadOriginal(d) {
    clear(original, spinner("Loading the original file"));
    try {
      const { type, data } = await fetchBytes(`/v1/documents/${encodeURIComponent(id)}:content`);
      if (!state.alive) return;
      if (d.file_type === "pdf") {
        let spanText = "";
        if (cite) {
          try {
            const section = findSection((await textLoaded).sections || [], cite);
            spanText = section ? section.text.slice(cite.start, cite.end) : "";
          } catch {
            spanText = "";
          }
        }
        const located = cite ? await locate(cite) : null;
        clear(original);
        await renderPdf(original, data, { page: cite?.page || 1, highlight: spanText, located });
      } else if (d.file_type === "image") {
        const url = URL.createObjectURL(new Blob([data], { type }));
        urls.push(url);
        const pageBox = el("div", { class: "image-page", "data-testid": "image-page" },
          el("img", { src: url, alt: `The uploaded image ${d.filename}`, class: "original-image" }));
        clear(original, pageBox);
        if (cite) {
          const located = await locate({ ...cite, page: cite.page || 1 });
          if (located) {
            drawBoxes(pageBox, located.boxes || []);
            pageBox.dataset.boxSource = located.source || "";
            original.append(el("p", { class: "muted small" }, (located.boxes || []).length
              ? "The cited span is highlighted on the image from the OCR's word boxes (Tesseract)."
              : "The cited span could not be located on the image; it is marked in the extracted text."));
          }
        }
      } else if (PREVIEWED.has(d.file_type)) {
        const { data: html } = await fetchBytes(`/v1/documents/${encodeURIComponent(id)}:preview`);
        if (!state.alive) return;
        // No scripts run in the frame (no allow-scripts); allow-same-origin lets this page mark the cited rows in it.
        const frame = el("iframe", { class: "preview", sandbox: "allow-same-origin", title: `Preview of ${d.filename}`, "data-testid": "preview-frame" });
        frame.srcdoc = new TextDecoder().decode(html);
        frame.addEventListener("load", async () => {
          const doc = frame.contentDocument;
          if (!doc || !cite) return;
          let spanText = "";
          try {
            const section = findSection((await textLoaded).sections || [], cite);
            spanText = section ? section.text.slice(cite.start, cite.end) : "";
          } catch {
            spanText = "";
          }
          markInPreview(doc, cite, spanText);
        });
        clear(original, frame);      } else if (MEDIA_TYPES.has(d.file_type) || /^(audio|video)\//.test(type)) {
        const url = URL.createObjectURL(new Blob([data], { type }));
        urls.push(url);
        const kind = d.file_type === "video" || type.startsWith("video/") ? "video" : "audio";
        clear(original, mediaPlayer(url, kind, d.filename, timeSpan));
      } else if (TEXT_TYPES.has(d.file_type)) {
        clear(original, el("pre", { class: "section-text" }, new TextDecoder().decode(data)));
      } else {
        clear(original, el("p", { class: "muted" }, `${d.file_type.toUpperCase()} files are not drawn in the browser: the extracted text beside shows the cited span; "Download original" gives the file.`));
      }
    } catch (error) {
      clear(original, errorBox(error, () => loadOriginal(d)));
    }
  }

  /** Where the cited span lies on its page (LocateSpan), or null when the server cannot say. */
  async function locate(c) {
    const q = new URLSearchParams({ page: String(c.page || 1), char_start: String(c.start), char_end: String(c.end) });
    if (c.answerEnd !== null && c.answerEnd > c.answerStart) {
      q.set("answer_char_start", String(c.answerStart));
      q.set("answer_char_end", String(c.answerEnd));
    }
    try {
      return await call(`/v1/documents/${encodeURIComponent(id)}:locate?${q}`);
    } catch {
      return null; // the extracted text beside still marks the span
    }
  }

  return () => {
    state.alive = false;
    urls.forEach((u) => URL.revokeObjectURL(u));
  };
}

/** Marks the cited rows (a sheet or a delimited file: data-row) or the cited text (a DOCX) in a preview. */
export function markInPreview(doc, cite, spanText) {
  const [first, last] = (cite.rows || "").split("-").map(Number);
  if (first) {
    const sheet = cite.sheet ? [...doc.querySelectorAll("section[data-sheet]")].find((s) => s.dataset.sheet === cite.sheet) : null;
    const scope = sheet || doc;
    const rows = [...scope.querySelectorAll("tr[data-row]")].filter((tr) => {
      const n = Number(tr.dataset.row);
      return n >= first && n <= (last || first);
    });
    rows.forEach((tr) => tr.classList.add("cited"));
    rows[0]?.scrollIntoView({ block: "center" });
    return rows.length;
  }
  if (!spanText.trim()) return 0;
  // The span's text, whitespace aside, across the preview's text nodes: each covered piece in a <mark>.
  const walker = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT);
  const pieces = [];
  let joined = "";
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i += 1) {
      if (!/\s/.test(node.data[i])) {
        joined += node.data[i];
        pieces.push([node, i]);
      }
    }
  }
  const target = spanText.replace(/\s+/g, "");
  const at = joined.indexOf(target);
  if (at < 0) return 0;
  const byNode = new Map();
  for (const [node, i] of pieces.slice(at, at + target.length)) {
    const range = byNode.get(node) || [i, i];
    byNode.set(node, [Math.min(range[0], i), Math.max(range[1], i)]);
  }
  let firstMark = null;
  for (const [node, [a, b]] of byNode) {
    const range = doc.createRange();
    range.setStart(node, a);
    range.setEnd(node, b + 1);
    const mark = doc.createElement("mark");
    mark.className = "cited";
    range.surroundContents(mark);
    firstMark = firstMark || mark;
  }
  firstMark?.scrollIntoView({ block: "center" });
  return byNode.size;
}

// Generative operations run on a language model: offline that is the small local one, on the CPU.
const LOCAL_NOTE = "Written by a language model: without a provider or a server chosen under Settings that is the small"
  + " local model on this machine's CPU, which takes about a minute here (seconds with a server) and writes plainly.";

/** Elapsed seconds beside a slow call, so a wait is never silent. */
function ticking(target) {
  const started = performance.now();
  const counter = el("span", { class: "local-note", "data-testid": "elapsed" });
  const tick = () => { counter.textContent = ` ${Math.round((performance.now() - started) / 1000)} s so far`; };
  tick();
  const timer = setInterval(tick, 1000);
  target.append(counter);
  return () => clearInterval(timer);
}

function analysisBlock(id, a) {
  const out = el("div", { class: "analysis-out", "aria-live": "polite" });
  const button = el("button", { type: "button", class: "secondary", dataset: { analysis: a.id } }, a.label);
  const note = a.generative ? el("p", { class: "local-note", "data-testid": "local-model-note" }, LOCAL_NOTE) : null;
  button.addEventListener("click", async () => {
    button.disabled = true;
    const loading = loadInto(out, a.label, () => call(a.path, { body: { document_id: id, ...(a.body || {}) } }), (r) => el("div", {}, a.view(r), engineNote(r)));
    const stop = a.generative ? ticking(out) : () => {};
    await loading;
    stop();
    button.disabled = false;
  });
  return el("div", { class: "analysis", id: `analysis-${a.id}` }, el("div", {}, button, note), out);
}

function rewriteBlock(id) {
  const out = el("div", { class: "analysis-out", "aria-live": "polite" });
  const style = el("input", { type: "text", id: "rewrite-style", placeholder: "e.g. plain English for a ten-year-old", value: "plain and short" });
  const form = el("form", { class: "analysis rewrite" }, el("label", { for: "rewrite-style" }, "Rewrite in a style"), style,
    el("button", { type: "submit", class: "secondary" }, "Rewrite"), el("p", { class: "local-note" }, LOCAL_NOTE), out);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const loading = loadInto(out, "Rewriting", () => call("/v1/nlp/rewrite", { body: { document_id: id, style: style.value.trim() } }),
      (r) => el("div", {}, el("p", { class: "rewritten" }, r.rewritten), engineNote(r)));
    const stop = ticking(out);
    await loading;
    stop();
  });
  return form;
}
