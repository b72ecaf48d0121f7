// Library: drag-and-drop uploads with one progress bar per file, and the documents table.
import { call, streamError, upload } from "./api.js";
import { clear, describe, docHref, el, enumLabel, errorBox, fmtBytes, fmtDate, pagesLabel, plural, spinner } from "./ui.js";

export const SELECTED_KEY = "docuthinker.selected";

// Share of the bar each stage reaches (embedding and OCR move within their range, k of n).
const STAGES = {
  INGEST_STAGE_RECEIVED: { at: 0.1, label: "received" },
  INGEST_STAGE_OCR: { from: 0.1, to: 0.35, label: "OCR" },
  INGEST_STAGE_PARSED: { at: 0.4, label: "parsed" },
  INGEST_STAGE_CHUNKED: { at: 0.45, label: "chunked" },
  INGEST_STAGE_EMBEDDED: { from: 0.45, to: 0.9, label: "embedded" },
  INGEST_STAGE_INDEXED: { at: 0.95, label: "indexed" },
  INGEST_STAGE_GRAPH_SYNCED: { at: 1, label: "graph synced" },
};

export function selectedDocs() {
  try {
    return JSON.parse(sessionStorage.getItem(SELECTED_KEY) || "[]");
  } catch {
    return [];
  }
}

function setSelected(ids) {
  sessionStorage.setItem(SELECTED_KEY, JSON.stringify(ids));
}

async function listAll() {
  const documents = [];
  let token = "";
  do {
    const page = await call(`/v1/documents?page_size=100${token ? `&page_token=${encodeURIComponent(token)}` : ""}`);
    documents.push(...(page.documents || []));
    token = page.next_page_token || "";
  } while (token);
  return documents;
}

export function render(main) {
  const state = { docs: [], query: "", type: "", sort: "create_time", dir: -1, timer: null, alive: true };
  // Out of the tab order: the drop zone (its label, focusable) opens it, so no Tab stop is ever invisible.
  const input = el("input", { type: "file", id: "file-input", multiple: true, class: "visually-hidden", tabindex: "-1" });
  const drop = el(
    "label",
    { for: "file-input", class: "drop", tabindex: "0", "data-testid": "dropzone" },
    el("strong", {}, "Drop files here"),
    " or press Enter to choose (PDF, DOCX, XLSX, CSV, HTML, Markdown, text, images)",
  );
  const uploads = el("ul", { class: "uploads", "aria-label": "Uploads", "aria-live": "polite" });
  const clearDone = el("button", { type: "button", class: "secondary small", hidden: true, "data-testid": "clear-uploads" }, "Clear finished uploads");
  const uploadsBar = el("div", { class: "uploads-bar" }, clearDone);
  const search = el("input", { type: "search", placeholder: "Search by name", "aria-label": "Search documents" });
  const typeFilter = el("select", { "aria-label": "Filter by type" }, el("option", { value: "" }, "All types"));
  const tableBox = el("div", { class: "table-box", tabindex: "0", role: "region", "aria-label": "Documents" }, spinner("Loading documents"));
  const tableError = el("div");
  const askSelected = el("a", { class: "button secondary", href: "#/ask" }, "Ask about the selected documents");

  clear(
    main,
    el("h1", {}, "Library"),
    el("section", { class: "card", "aria-labelledby": "upload-h" }, el("h2", { id: "upload-h" }, "Upload"), input, drop, uploads, uploadsBar),
    el(
      "section",
      { class: "card", "aria-labelledby": "docs-h" },
      el("h2", { id: "docs-h" }, "Documents"),
      el("div", { class: "toolbar" }, search, typeFilter, askSelected),
      tableError,
      tableBox,
    ),
  );

  drop.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      input.click();
    }
  });
  drop.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    startUploads([...e.dataTransfer.files]);
  });
  input.addEventListener("change", () => {
    startUploads([...input.files]);
    input.value = "";
  });
  search.addEventListener("input", () => {
    state.query = search.value.trim().toLowerCase();
    drawTable();
  });
  typeFilter.addEventListener("change", () => {
    state.type = typeFilter.value;
    drawTable();
  });

  // Finished rows do not pile up: a new batch clears the rows that succeeded before it, and a button clears
  // every finished row (failed ones included) at once.
  const finished = () => [...uploads.querySelectorAll('li.upload[data-state="done"], li.upload[data-state="failed"]')];
  const showClear = () => { clearDone.hidden = finished().length === 0; };
  clearDone.addEventListener("click", () => {
    finished().forEach((li) => li.remove());
    showClear();
    drop.focus();
  });

  function startUploads(files) {
    uploads.querySelectorAll('li.upload[data-state="done"]').forEach((li) => li.remove());
    // Two at a time: each upload holds the embedding model for a while.
    const queue = [...files];
    const rows = new Map(files.map((f) => [f, uploadRow(f)]));
    const worker = async () => {
      while (queue.length) {
        const file = queue.shift();
        await runUpload(file, rows.get(file));
        showClear();
      }
    };
    Promise.all([worker(), worker()]).then(refresh);
  }

  function uploadRow(file) {
    const bar = el("progress", { max: "1", value: "0", "aria-label": `Progress of ${file.name}` });
    const stage = el("span", { class: "stage" }, "waiting");
    const message = el("div", { class: "upload-message" });
    const li = el("li", { class: "upload", dataset: { file: file.name, state: "waiting" } },
      el("div", { class: "upload-head" }, el("span", { class: "name" }, file.name), el("span", { class: "muted" }, fmtBytes(file.size)), stage),
      bar, message);
    uploads.prepend(li);
    return { li, bar, stage, message };
  }

  async function runUpload(file, row) {
    const set = (value, label, s = "running") => {
      row.bar.value = value;
      row.stage.textContent = label;
      row.li.dataset.state = s;
      // Every stage seen, in order (also the row's tooltip): "sending 100%|received|parsed|...".
      if (row.li.dataset.stages?.split("|").at(-1) !== label) {
        row.li.dataset.stages = row.li.dataset.stages ? `${row.li.dataset.stages}|${label}` : label;
        row.li.title = row.li.dataset.stages.replaceAll("|", " → ");
      }
    };
    set(0, "sending");
    try {
      await upload(file, {
        onSent: (f) => set(0.1 * f, `sending ${Math.round(f * 100)}%`),
        onEvent: (m) => {
          if (m.progress) {
            const p = m.progress;
            const spec = STAGES[p.stage] || { at: row.bar.value, label: enumLabel(p.stage, "INGEST_STAGE_") };
            const total = Number(p.total || 0);
            const done = Number(p.done || 0);
            if (spec.from !== undefined && total > 0) {
              set(spec.from + (spec.to - spec.from) * (done / total), `${spec.label} ${done}/${total}`);
            } else {
              set(Math.max(row.bar.value, spec.at ?? row.bar.value), spec.label);
            }
            if (p.message) row.message.textContent = p.message;
          } else if (m.done) {
            const d = m.done.document || {};
            set(1, m.done.duplicate ? "done (already in the library)" : "done", "done");
            const pages = pagesLabel(d);
            clear(row.message, el("a", { href: docHref(d.document_id) }, "Open"), ` ${plural(d.chunk_count, "chunk")}${pages === "—" ? "" : `, ${pages}`}`);
          } else if (m.error) {
            throw streamError(m.error);
          }
        },
      });
      if (row.li.dataset.state !== "done") throw new Error("the upload stream ended without a result");
    } catch (error) {
      set(row.bar.value, "failed", "failed");
      clear(row.message, errorBox(error));
    }
  }

  function visible() {
    const q = state.query;
    const rows = state.docs.filter(
      (d) => (!state.type || d.file_type === state.type) && (!q || `${d.filename} ${d.title || ""}`.toLowerCase().includes(q)),
    );
    const key = state.sort;
    const num = ["page_count", "chunk_count", "size_bytes"].includes(key);
    rows.sort((a, b) => {
      const x = num ? Number(a[key] || 0) : String(a[key] || "");
      const y = num ? Number(b[key] || 0) : String(b[key] || "");
      return (x < y ? -1 : x > y ? 1 : 0) * state.dir;
    });
    return rows;
  }

  const COLUMNS = [
    ["filename", "Name"], ["file_type", "Type"], ["page_count", "Pages"], ["chunk_count", "Chunks"], ["status", "Status"],
    ["graph_sync", "Graph"], ["size_bytes", "Size"], ["create_time", "Added"],
  ];

  function drawTable() {
    const selected = new Set(selectedDocs());
    const rows = visible();
    const head = el("tr", {}, el("th", { scope: "col" }, el("span", { class: "visually-hidden" }, "Select")),
      ...COLUMNS.map(([key, label]) => {
        const sorted = state.sort === key;
        const button = el("button", { class: "sort", type: "button" }, label, sorted ? (state.dir > 0 ? " ▲" : " ▼") : "");
        button.addEventListener("click", () => {
          state.dir = state.sort === key ? -state.dir : 1;
          state.sort = key;
          drawTable();
        });
        return el("th", { scope: "col", "aria-sort": sorted ? (state.dir > 0 ? "ascending" : "descending") : "none", class: `col-${key}` }, button);
      }),
      el("th", { scope: "col" }, "Actions"));
    const body = rows.map((d) => {
      const status = enumLabel(d.status, "DOCUMENT_STATUS_");
      const check = el("input", { type: "checkbox", "aria-label": `Select ${d.filename}`, checked: selected.has(d.document_id) });
      check.addEventListener("change", () => {
        const ids = new Set(selectedDocs());
        if (check.checked) ids.add(d.document_id);
        else ids.delete(d.document_id);
        setSelected([...ids]);
      });
      const reindex = el("button", { type: "button", class: "secondary small" }, "Re-index");
      reindex.addEventListener("click", () => act(reindex, () => call(`/v1/documents/${encodeURIComponent(d.document_id)}:reindex`, { body: {} })));
      const del = el("button", { type: "button", class: "danger small" }, "Delete");
      del.addEventListener("click", () => {
        if (confirm(`Delete ${d.filename}? Its chunks leave every index.`)) {
          act(del, () => call(`/v1/documents/${encodeURIComponent(d.document_id)}`, { method: "DELETE" }));
        }
      });
      return el("tr", { dataset: { documentId: d.document_id, filename: d.filename } },
        el("td", { class: "col-select" }, check),
        el("td", { class: "col-filename" }, el("a", { href: docHref(d.document_id) }, d.filename), d.title && d.title !== d.filename ? el("div", { class: "muted" }, d.title) : null,
          d.error_message ? el("div", { class: "error small" }, d.error_message) : null),
        el("td", { "data-label": "Type" }, d.file_type),
        el("td", { class: "num", "data-label": "Pages", title: pagesLabel(d) === "—" ? "not paged (no fixed pages)" : null }, pagesLabel(d)),
        el("td", { class: "num", "data-label": "Chunks" }, plural(d.chunk_count, "chunk")),
        el("td", { "data-label": "Status" }, el("span", { class: `badge status-${status}` }, status)),
        el("td", { "data-label": "Graph" }, enumLabel(d.graph_sync, "GRAPH_SYNC_STATUS_")),
        el("td", { class: "num", "data-label": "Size" }, fmtBytes(d.size_bytes)), el("td", { "data-label": "Added" }, fmtDate(d.create_time)),
        el("td", { class: "actions" }, reindex, del));
    });
    clear(tableBox, rows.length || state.docs.length
      ? el("table", { class: "docs", "data-testid": "documents" }, el("thead", {}, head), el("tbody", {}, body))
      : el("p", { class: "muted" }, "No documents yet: drop some files above."));
    if (state.docs.length && !rows.length) tableBox.append(el("p", { class: "muted" }, "No document matches the search."));
  }

  async function act(button, run) {
    button.disabled = true;
    const label = button.textContent;
    button.textContent = "…";
    try {
      await run();
      clear(tableError);
    } catch (error) {
      clear(tableError, el("div", { class: "error", role: "alert" }, describe(error)));
    } finally {
      button.disabled = false;
      button.textContent = label;
      refresh();
    }
  }

  async function refresh() {
    if (!state.alive) return;
    try {
      state.docs = await listAll();
      const types = [...new Set(state.docs.map((d) => d.file_type))].sort();
      clear(typeFilter, el("option", { value: "" }, "All types"), types.map((t) => el("option", { value: t, selected: t === state.type }, t)));
      drawTable();
      clear(tableError);
    } catch (error) {
      clear(tableBox);
      clear(tableError, errorBox(error, refresh));
    }
    clearTimeout(state.timer);
    const busy = state.docs.some((d) => !["DOCUMENT_STATUS_READY", "DOCUMENT_STATUS_FAILED"].includes(d.status) || d.graph_sync === "GRAPH_SYNC_STATUS_PENDING");
    if (busy && state.alive) state.timer = setTimeout(refresh, 2000);
  }

  refresh();
  return () => {
    state.alive = false;
    clearTimeout(state.timer);
  };
}
