// Citations as people read them: where a span is ("harbour-report.pdf, p. 2, row 5"), the link that opens the
// document at it, the short answer first with its supporting quote, and a preview in place (a popover on hover
// or keyboard focus of a marker or a citation link).
import { docHref, el, fmtClock } from "./ui.js";

/** A citation of a recording (audio or video) carries the time it was said; 0 is omitted by JSON. */
export function isTimed(c) {
  return Number(c.end_seconds || 0) > 0;
}

/** "harbour-report.pdf, p. 2, sheet Cars, row Duster 360 · column hp": where a citation points. */
export function where(c) {
  const parts = [c.filename || c.document_id];
  if (c.page) parts.push(`p. ${c.page}`);
  if (c.sheet_name) parts.push(`sheet ${c.sheet_name}`);
  if (c.row_label && c.column_header) parts.push(`row “${c.row_label}”, column “${c.column_header}”`);
  else if (c.row_start) {
    const end = c.row_end || c.row_start;
    parts.push(Number(end) === Number(c.row_start) ? `row ${c.row_start}` : `rows ${c.row_start}-${end}`);
  }
  if ((c.heading_path || []).length) parts.push(c.heading_path.join(" › "));
  if (isTimed(c)) parts.push(`at ${fmtClock(c.start_seconds)}–${fmtClock(c.end_seconds)}`);
  return parts.join(", ");
}

export function citationHref(c) {
  const answered = Number(c.answer_char_end || 0) > Number(c.answer_char_start || 0);
  return docHref(c.document_id, {
    page: c.page || "",
    start: c.char_start,
    end: c.char_end,
    as: answered ? c.answer_char_start : "",
    ae: answered ? c.answer_char_end : "",
    sheet: c.sheet_name || "",
    rows: c.row_start ? `${c.row_start}-${c.row_end || c.row_start}` : "",
    heading: (c.heading_path || []).join(" › "),
    marker: c.marker,
    t0: isTimed(c) ? Number(c.start_seconds || 0).toFixed(2) : "",
    t1: isTimed(c) ? Number(c.end_seconds).toFixed(2) : "",
  });
}

/** The cited excerpt with its short answer marked (the answer offsets are the page's, like the span's). */
export function quote(c) {
  const text = c.excerpt || "";
  const start = Number(c.answer_char_start || 0) - Number(c.char_start || 0);
  const end = Number(c.answer_char_end || 0) - Number(c.char_start || 0);
  if (end > start && start >= 0 && end <= text.length) {
    return [text.slice(0, start), el("mark", { class: "answer" }, text.slice(start, end)), text.slice(end)];
  }
  if (c.short_answer) {
    const at = text.indexOf(c.short_answer);
    if (at >= 0) return [text.slice(0, at), el("mark", { class: "answer" }, c.short_answer), text.slice(at + c.short_answer.length)];
  }
  return [text];
}

/** The short answer of an answer: the first citation's, when the engine found one. */
export function shortAnswer(answer) {
  const c = (answer.citations || []).find((x) => x.short_answer);
  return c ? { text: c.short_answer, citation: c } : null;
}

/** Preview in place: one popover per page, shown by hovering or focusing an element carrying a citation. */
export class Previews {
  constructor(root) {
    this.pop = el("div", { class: "preview-pop", role: "tooltip", id: "citation-preview", hidden: true, "data-testid": "preview" });
    root.append(this.pop);
    this.hideTimer = 0;
    const hideSoon = () => { this.hideTimer = setTimeout(() => this.hide(), 150); };
    root.addEventListener("mouseover", (e) => this.showFor(e.target));
    root.addEventListener("focusin", (e) => this.showFor(e.target));
    root.addEventListener("mouseout", (e) => { if (e.target.closest?.("[data-preview]")) hideSoon(); });
    root.addEventListener("focusout", (e) => { if (e.target.closest?.("[data-preview]")) hideSoon(); });
    document.addEventListener("keydown", this.onKey = (e) => { if (e.key === "Escape") this.hide(); });
    this.citations = new Map();
  }

  /** Marks `node` as previewing citation `c`. */
  attach(node, c) {
    const key = `${this.citations.size}`;
    this.citations.set(key, c);
    node.dataset.preview = key;
    node.setAttribute("aria-describedby", "citation-preview");
    return node;
  }

  showFor(target) {
    const node = target.closest?.("[data-preview]");
    if (!node) return;
    const c = this.citations.get(node.dataset.preview);
    if (!c) return;
    clearTimeout(this.hideTimer);
    this.pop.replaceChildren(el("div", { class: "where" }, `[${c.marker}] ${where(c)}`), el("blockquote", {}, quote(c)),
      el("div", { class: "muted small" }, "Enter or a click opens the document at this span; Escape closes this."));
    this.pop.hidden = false;
    const box = node.getBoundingClientRect();
    const host = this.pop.offsetParent?.getBoundingClientRect() || { left: 0, top: 0 };
    const width = this.pop.offsetWidth;
    const left = Math.max(4, Math.min(box.left - host.left, document.documentElement.clientWidth - host.left - width - 8));
    this.pop.style.left = `${left}px`;
    this.pop.style.top = `${box.bottom - host.top + 6}px`;
  }

  hide() {
    this.pop.hidden = true;
  }

  close() {
    document.removeEventListener("keydown", this.onKey);
  }
}
