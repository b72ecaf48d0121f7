// A PDF page drawn by pdf.js (pdfjs-dist, vendored at setup) with its text layer, and a cited span
// highlighted on it: the span's text is found in the page's text items, whitespace aside.
import * as pdfjs from "/vendor/pdf.min.mjs";
import { clear, el, errorBox } from "./ui.js";

pdfjs.GlobalWorkerOptions.workerSrc = "/vendor/pdf.worker.min.mjs";

/** Indices of the text items that hold `needle` (whitespace ignored, then case too); [] when absent. */
export function itemsHolding(items, needle) {
  const squash = (s) => s.replace(/\s+/g, "");
  const target = squash(needle);
  if (!target) return [];
  let joined = "";
  const owner = [];
  items.forEach((s, i) => {
    const part = squash(s);
    joined += part;
    for (let k = 0; k < part.length; k += 1) owner.push(i);
  });
  let at = joined.indexOf(target);
  if (at < 0) at = joined.toLowerCase().indexOf(target.toLowerCase());
  if (at < 0) return [];
  return [...new Set(owner.slice(at, at + target.length))];
}

/** Rectangles (fractions of the page, from its top-left corner) drawn over a page box: a cited span located by
 *  the server (LocateSpan: PDFium's character boxes, or OCR's word boxes for a scan). */
export function drawBoxes(pageBox, boxes) {
  for (const b of boxes || []) {
    const box = el("div", { class: b.answer ? "span-box answer" : "span-box", "data-testid": b.answer ? "answer-box" : "span-box", "aria-hidden": "true" });
    Object.assign(box.style, { left: `${b.x0 * 100}%`, top: `${b.y0 * 100}%`, width: `${(b.x1 - b.x0) * 100}%`, height: `${(b.y1 - b.y0) * 100}%` });
    pageBox.append(box);
  }
  pageBox.dataset.boxes = String((boxes || []).length);
}

export async function renderPdf(container, data, { page = 1, highlight = "", located = null } = {}) {
  const task = pdfjs.getDocument({ data: new Uint8Array(data), isEvalSupported: false });
  const pdf = await task.promise;
  let current = Math.min(Math.max(1, page), pdf.numPages);
  const status = el("span", { class: "muted", "aria-live": "polite" });
  const prev = el("button", { type: "button", class: "secondary small" }, "◀ Previous");
  const next = el("button", { type: "button", class: "secondary small" }, "Next ▶");
  const note = el("p", { class: "muted small" });
  const stage = el("div", { class: "pdf-stage" });
  container.append(el("div", { class: "row pdf-nav" }, prev, status, next), stage, note);

  async function draw() {
    status.textContent = `Page ${current} of ${pdf.numPages}`;
    prev.disabled = current <= 1;
    next.disabled = current >= pdf.numPages;
    clear(stage);
    try {
      const p = await pdf.getPage(current);
      const width = Math.max(280, Math.min((stage.clientWidth || 700) - 8, 900));
      const viewport = p.getViewport({ scale: width / p.getViewport({ scale: 1 }).width });
      const ratio = window.devicePixelRatio || 1;
      const canvas = el("canvas", { width: Math.floor(viewport.width * ratio), height: Math.floor(viewport.height * ratio), "aria-hidden": "true" });
      canvas.style.width = `${viewport.width}px`;
      canvas.style.height = `${viewport.height}px`;
      const layer = el("div", { class: "textLayer" });
      const pageBox = el("div", { class: "pdf-page", "data-testid": "pdf-page", dataset: { page: current } }, canvas, layer);
      pageBox.style.setProperty("--scale-factor", viewport.scale);
      pageBox.style.setProperty("--total-scale-factor", viewport.scale);
      pageBox.style.setProperty("--scale-round-x", "1px");
      pageBox.style.setProperty("--scale-round-y", "1px");
      pageBox.style.width = `${viewport.width}px`;
      pageBox.style.height = `${viewport.height}px`;
      stage.append(pageBox);
      await p.render({ canvas, canvasContext: canvas.getContext("2d"), viewport, transform: ratio !== 1 ? [ratio, 0, 0, ratio, 0, 0] : null }).promise;
      const text = new pdfjs.TextLayer({ textContentSource: await p.getTextContent(), container: layer, viewport });
      await text.render();
      const marked = highlight && current === page ? itemsHolding(text.textContentItemsStr, highlight) : [];
      marked.forEach((i) => text.textDivs[i]?.classList.add("hl"));
      const boxes = current === page && located ? located.boxes || [] : [];
      drawBoxes(pageBox, boxes);
      if (located && current === page) pageBox.dataset.boxSource = located.source || "";
      pageBox.dataset.highlighted = String(marked.length + boxes.length);
      const engine = located?.source === "tesseract" ? "the OCR's word boxes (Tesseract: a scanned page)" : "the PDF's own character boxes";
      note.textContent = (highlight || boxes.length) && current === page
        ? (boxes.length ? `The cited span is highlighted on the page from ${engine}${boxes.some((b) => b.answer) ? "; the answer itself in orange" : ""}.`
          : marked.length ? "The cited span is highlighted on the page."
            : "The cited span could not be located on the drawn page; it is marked in the extracted text.")
        : "";
      const first = pageBox.querySelector(".span-box") || (marked.length ? text.textDivs[marked[0]] : null);
      if (first) first.scrollIntoView({ block: "center" });
      container.dataset.ready = "true";
    } catch (error) {
      clear(stage, errorBox(error));
    }
  }
  prev.addEventListener("click", () => { current -= 1; draw(); });
  next.addEventListener("click", () => { current += 1; draw(); });
  await draw();
}
