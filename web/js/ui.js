// Small DOM helpers shared by the pages: element building, formatting, spinners and error boxes.
import { ApiError } from "./api.js";

/** el("div", {class: "x", onclick: f}, child, "text", ...): an element; null/false children are skipped. */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
  return node;
}

export function spinner(label = "Loading") {
  return el("span", { class: "spinner", role: "status" }, el("span", { class: "dot", "aria-hidden": "true" }), ` ${label}…`);
}

/** A readable sentence for any error (ApiError explains HTTP and gRPC codes). */
export function describe(error) {
  if (error instanceof ApiError) return error.explain();
  return error && error.message ? error.message : String(error);
}

/** The error in words; with `retry`, a Retry button that runs it (offered for every error: a refused call can
 *  succeed once the token or the input is fixed, and a restarting service comes back). */
export function errorBox(error, retry = null) {
  const box = el("div", { class: "error", role: "alert" }, describe(error));
  if (retry) {
    box.append(el("button", { type: "button", class: "secondary small retry", "data-testid": "retry",
      onclick: () => retry() }, "Retry"));
  }
  return box;
}

/** "DOCUMENT_STATUS_READY" -> "ready" (enum names as the transcoder prints them). */
export function enumLabel(value, prefix) {
  if (value === undefined || value === null) return "";
  const s = String(value);
  return (s.startsWith(prefix) ? s.slice(prefix.length) : s).toLowerCase().replace(/_/g, " ");
}

export function fmtBytes(n) {
  const v = Number(n || 0);
  if (v < 1024) return `${v} B`;
  if (v < 1024 * 1024) return `${(v / 1024).toFixed(1)} KB`;
  return `${(v / 1024 / 1024).toFixed(1)} MB`;
}

export function fmtDate(ts) {
  if (!ts) return "";
  const d = new Date(ts);
  return Number.isNaN(d.getTime()) ? String(ts) : d.toLocaleString();
}

export function fmtMs(ms) {
  const v = Number(ms || 0);
  return v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${v.toFixed(0)} ms`;
}

/** Seconds as "m:ss" (a time in a recording). */
export function fmtClock(seconds) {
  const v = Math.max(0, Math.floor(Number(seconds || 0)));
  return `${Math.floor(v / 60)}:${String(v % 60).padStart(2, "0")}`;
}

export function fmtUsd(v) {
  return `$${Number(v || 0).toFixed(4)}`;
}

/** Runs `load()` into `target` with a spinner first and an explained error on failure. */
export async function loadInto(target, label, load, render) {
  clear(target, spinner(label));
  target.setAttribute("aria-busy", "true");
  try {
    const data = await load();
    clear(target, render(data));
  } catch (error) {
    clear(target, errorBox(error, () => loadInto(target, label, load, render)));
  } finally {
    target.removeAttribute("aria-busy");
  }
}

/** The page of a hash route: "#/doc/abc?page=2" -> {parts: ["doc", "abc"], params: URLSearchParams}. */
export function parseRoute(hash) {
  const raw = (hash || "").replace(/^#\/?/, "");
  const [path, query] = raw.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(query || "") };
}

export function docHref(documentId, params = {}) {
  const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""));
  const s = q.toString();
  return `#/doc/${encodeURIComponent(documentId)}${s ? `?${s}` : ""}`;
}

/** "1 chunk", "2 chunks". */
export function plural(n, word, many = `${word}s`) {
  const v = Number(n || 0);
  return `${v} ${v === 1 ? word : many}`;
}

/** Pages of a paged document, sheets of a workbook, or "—" (DOCX and delimited text have no fixed pages). */
export function pagesLabel(d) {
  if (Number(d.page_count || 0) > 0) return plural(d.page_count, "page");
  const sheets = (d.sheet_names || []).length;
  if (sheets) return plural(sheets, "sheet");
  return "—";
}
