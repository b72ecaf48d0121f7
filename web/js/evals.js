// Evaluations: upload a set of questions with expected answers, run it (progress), read the results per
// question, export them, and put two runs side by side (what got better or worse).
//   #/evals                          sets, runs, upload
//   #/evals/run/<run_id>             one run: progress, totals per kind and tag, every question
//   #/evals/compare?base=&candidate= two runs side by side
import { call, fetchBytes, sendBytes } from "./api.js";
import { clear, describe, el, enumLabel, errorBox, fmtDate, loadInto, spinner } from "./ui.js";

const RUNNING = "EVAL_RUN_STATE_RUNNING";
const FIGURES = [
  ["answer_correct", "Correct"],
  ["citation_hit", "Cited"],
  ["answered_rate", "Answered"],
  ["abstention_unanswerable", "Refused (unanswerable)"],
  ["latency_p50_s", "p50 s"],
  ["latency_p95_s", "p95 s"],
];

const rate = (v) => (v === undefined || v === null ? "–" : Number(v).toFixed(3));
const state = (run) => enumLabel(run.state, "EVAL_RUN_STATE_");
const mode = (settings) => enumLabel((settings || {}).mode || "EVAL_MODE_ANSWER", "EVAL_MODE_");
const overall = (run) => ((run.totals || {}).overall || {});

function settingsText(run) {
  const s = run.settings || {};
  const docs = (s.document_ids || []).length;
  return `${mode(s)}, top_k ${s.top_k || "default"}, ${docs ? `${docs} document(s)` : "whole library"}`;
}

function table(head, rows, attrs = {}) {
  return el("div", { class: "table-box" }, el("table", attrs,
    el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows)));
}

function progress(run) {
  return el("span", { class: "eval-progress" },
    el("progress", { max: String(run.total || 1), value: String(run.completed || 0), "aria-label": `Progress of run ${run.label || run.run_id}` }),
    el("span", { class: "small", "data-testid": "run-progress" }, ` ${run.completed || 0}/${run.total || 0}`));
}

function badge(run) {
  const s = state(run);
  const cls = s === "succeeded" ? "ok" : s === "running" ? "" : "bad";
  return el("span", { class: `badge ${cls}`, "data-testid": "run-state" }, s);
}

async function download(runId, format) {
  const { type, data } = await fetchBytes(`/v1/eval-runs/${encodeURIComponent(runId)}:export?format=${format}`);
  const url = URL.createObjectURL(new Blob([data], { type }));
  const a = el("a", { href: url, download: `eval-run-${runId}.${format}` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function totalsTable(run) {
  const totals = run.totals || {};
  const rows = [["all", totals.overall || {}],
    ...Object.entries(totals.per_kind || {}).sort().map(([k, v]) => [`kind: ${k}`, v]),
    ...Object.entries(totals.per_tag || {}).sort().map(([k, v]) => [`tag: ${k}`, v])];
  return table(["Slice", "Questions", ...FIGURES.map(([, label]) => label), "Errors"],
    rows.map(([name, f]) => el("tr", {}, el("td", {}, name), el("td", { class: "num" }, f.items || 0),
      FIGURES.map(([key]) => el("td", { class: "num" }, rate(f[key]))), el("td", { class: "num" }, f.errors || 0))),
    { "data-testid": "totals" });
}

// -- the list: upload, sets, runs ----------------------------------------------------------------
function renderList(main) {
  const timers = { poll: null };
  const uploadResult = el("div", { "aria-live": "polite" });
  const fileInput = el("input", { type: "file", id: "eval-file", accept: ".csv,.json,text/csv,application/json", "data-testid": "eval-file" });
  const nameInput = el("input", { type: "text", id: "eval-name", placeholder: "name (default: the file's)" });
  const uploadButton = el("button", { type: "submit" }, "Upload set");
  const setsBox = el("div", {}, spinner("Loading sets"));
  const runsBox = el("div", {}, spinner("Loading runs"));
  const compareButton = el("button", { type: "button", disabled: true, "data-testid": "compare-selected" }, "Compare the two selected runs");
  const chosen = [];

  clear(main, el("h1", {}, "Evaluations"),
    el("p", { class: "muted" }, "Your own questions with the answers you accept, run against your library: how often DocuThinker answers correctly, cites the right place, and refuses what the documents cannot answer."),
    el("section", { class: "card", "aria-labelledby": "eval-upload-h" }, el("h2", { id: "eval-upload-h" }, "Upload a set"),
      el("form", { class: "eval-upload", onsubmit: (e) => { e.preventDefault(); upload(); } },
        el("label", { for: "eval-file" }, "CSV or JSON file"), fileInput,
        el("label", { for: "eval-name" }, "Name"), nameInput, uploadButton),
      el("p", { class: "small muted" }, "CSV columns: question, answers (separated by |, or the word unanswerable), and optionally id, document, page, kind, tags."),
      uploadResult),
    el("section", { class: "card", "aria-labelledby": "eval-sets-h" }, el("h2", { id: "eval-sets-h" }, "Sets"), setsBox),
    el("section", { class: "card", "aria-labelledby": "eval-runs-h" }, el("div", { class: "row" }, el("h2", { id: "eval-runs-h" }, "Runs"), compareButton), runsBox));

  async function upload() {
    const file = fileInput.files[0];
    if (!file) {
      clear(uploadResult, errorBox(new Error("Choose a CSV or JSON file first.")));
      return;
    }
    uploadButton.disabled = true;
    clear(uploadResult, spinner("Uploading"));
    // encodeURIComponent, not URLSearchParams: the gateway's transcoder reads "+" as a plus, not a space.
    let q = `filename=${encodeURIComponent(file.name)}`;
    if (nameInput.value.trim()) q += `&name=${encodeURIComponent(nameInput.value.trim())}`;
    const type = file.type || (file.name.endsWith(".json") ? "application/json" : "text/csv");
    try {
      const body = await sendBytes(`/v1/eval-sets?${q}`, file, { type });
      clear(uploadResult, el("p", { "data-testid": "upload-ok" }, `Stored "${body.eval_set.name}": ${body.eval_set.item_count} questions.`));
      fileInput.value = "";
      loadSets();
    } catch (error) {
      clear(uploadResult, el("div", { class: "error", role: "alert", "data-testid": "upload-error" }, describe(error)));
    } finally {
      uploadButton.disabled = false;
    }
  }

  function runControls(set) {
    const topK = el("input", { type: "number", min: "0", max: "50", value: "0", class: "narrow", "aria-label": `top_k for ${set.name}` });
    const agent = el("select", { "aria-label": `Engine for ${set.name}` }, el("option", { value: "EVAL_MODE_ANSWER" }, "answer engine"), el("option", { value: "EVAL_MODE_AGENT" }, "agent"));
    const label = el("input", { type: "text", placeholder: "label", class: "narrow", "aria-label": `Label for ${set.name}` });
    const start = el("button", { type: "button", class: "small", "data-testid": "start-run" }, "Run");
    const message = el("span", { class: "small" });
    start.addEventListener("click", async () => {
      start.disabled = true;
      try {
        await call(`/v1/eval-sets/${encodeURIComponent(set.set_id)}/runs`, { body: { top_k: Number(topK.value || 0), mode: agent.value, label: label.value.trim() } });
        clear(message);
        loadRuns();
      } catch (error) {
        clear(message, el("span", { class: "error small" }, describe(error)));
      } finally {
        start.disabled = false;
      }
    });
    return el("span", { class: "row" }, "top_k", topK, agent, label, start, message);
  }

  function deleteButton(set) {
    const b = el("button", { type: "button", class: "danger small" }, "Delete");
    b.addEventListener("click", async () => {
      if (!confirm(`Delete the set "${set.name}" and its runs?`)) return;
      try {
        await call(`/v1/eval-sets/${encodeURIComponent(set.set_id)}`, { method: "DELETE" });
        loadSets();
        loadRuns();
      } catch (error) {
        setsBox.prepend(errorBox(error));
      }
    });
    return b;
  }

  function loadSets() {
    loadInto(setsBox, "Loading sets", () => call("/v1/eval-sets?page_size=200"), (r) => {
      const sets = r.eval_sets || [];
      if (!sets.length) return el("p", { class: "muted", "data-testid": "no-sets" }, "No sets yet: upload one above.");
      return table(["Name", "Questions", "Kinds", "Uploaded", "Run it", ""], sets.map((s) => el("tr", { dataset: { setId: s.set_id } },
        el("td", { class: "col-filename" }, s.name), el("td", { class: "num" }, s.item_count || 0),
        el("td", { class: "small" }, Object.entries(s.kinds || {}).map(([k, v]) => `${k} ${v}`).join(", ")),
        el("td", {}, fmtDate(s.create_time)), el("td", {}, runControls(s)), el("td", { class: "actions" }, deleteButton(s)))),
      { "data-testid": "sets" });
    });
  }

  function toggle(runId, on) {
    const at = chosen.indexOf(runId);
    if (on && at < 0) chosen.push(runId);
    if (!on && at >= 0) chosen.splice(at, 1);
    while (chosen.length > 2) chosen.shift();
    runsBox.querySelectorAll("input[data-run]").forEach((box) => { box.checked = chosen.includes(box.dataset.run); });
    compareButton.disabled = chosen.length !== 2;
  }

  function runRow(run) {
    const pick = el("input", { type: "checkbox", "aria-label": `Select run ${run.label || run.run_id} for comparison`, dataset: { run: run.run_id } });
    pick.checked = chosen.includes(run.run_id);
    pick.addEventListener("change", () => toggle(run.run_id, pick.checked));
    const f = overall(run);
    const cancel = run.state === RUNNING ? el("button", { type: "button", class: "danger small", "data-testid": "cancel-run" }, "Cancel") : null;
    if (cancel) cancel.addEventListener("click", async () => {
      cancel.disabled = true;
      try {
        await call(`/v1/eval-runs/${encodeURIComponent(run.run_id)}:cancel`, { body: {} });
      } catch (error) {
        runsBox.prepend(errorBox(error));
      }
      loadRuns();
    });
    const exportCsv = el("button", { type: "button", class: "secondary small" }, "CSV");
    exportCsv.addEventListener("click", () => download(run.run_id, "csv").catch((e) => runsBox.prepend(errorBox(e))));
    return el("tr", { dataset: { runId: run.run_id, state: state(run) } }, el("td", {}, pick),
      el("td", {}, el("a", { href: `#/evals/run/${encodeURIComponent(run.run_id)}` }, run.label || run.run_id.slice(0, 8))),
      el("td", {}, run.set_name), el("td", { class: "small" }, settingsText(run)), el("td", {}, badge(run)), el("td", {}, progress(run)),
      el("td", { class: "num" }, rate(f.answer_correct)), el("td", { class: "num" }, rate(f.citation_hit)),
      el("td", { class: "num" }, rate(f.abstention_unanswerable)), el("td", { class: "num" }, rate(f.latency_p50_s)),
      el("td", {}, fmtDate(run.create_time)), el("td", { class: "actions" }, cancel, exportCsv));
  }

  async function loadRuns() {
    clearTimeout(timers.poll);
    let runs;
    try {
      runs = (await call("/v1/eval-runs?page_size=100")).runs || [];
    } catch (error) {
      clear(runsBox, errorBox(error));
      return;
    }
    clear(runsBox, runs.length ? table(["", "Run", "Set", "Settings", "State", "Progress", "Correct", "Cited", "Refused (unans.)", "p50 s", "Started", ""],
      runs.map(runRow), { "data-testid": "runs" }) : el("p", { class: "muted" }, "No runs yet."));
    if (runs.some((r) => r.state === RUNNING)) timers.poll = setTimeout(loadRuns, 1000);
  }

  compareButton.addEventListener("click", () => {
    if (chosen.length === 2) location.hash = `#/evals/compare?base=${encodeURIComponent(chosen[0])}&candidate=${encodeURIComponent(chosen[1])}`;
  });
  loadSets();
  loadRuns();
  return () => clearTimeout(timers.poll);
}

// -- one run ------------------------------------------------------------------------------------------
function citationsText(item) {
  return (item.citations || []).map((c) => `${c.filename}${c.page ? ` p${c.page}` : ""}${c.sheet_name ? ` [${c.sheet_name}]` : ""}`).join("; ");
}

function yes(flag) {
  return flag ? "✓" : "–";
}

function renderRun(main, runId) {
  const timers = { poll: null };
  const head = el("div", {}, spinner("Loading the run"));
  const totals = el("div");
  const items = el("div");
  const filter = el("select", { "aria-label": "Show questions" }, ["all", "wrong", "refused", "errors"].map((v) => el("option", { value: v }, v)));
  let results = [];
  clear(main, el("p", {}, el("a", { href: "#/evals" }, "← Evaluations")), head,
    el("section", { class: "card", "aria-labelledby": "eval-totals-h" }, el("h2", { id: "eval-totals-h" }, "Totals per kind and tag"), totals),
    el("section", { class: "card", "aria-labelledby": "eval-items-h" }, el("div", { class: "row" }, el("h2", { id: "eval-items-h" }, "Questions"), filter), items));

  function drawItems() {
    const shown = results.filter((r) => filter.value === "all" || (filter.value === "wrong" && !r.correct)
      || (filter.value === "refused" && r.refused) || (filter.value === "errors" && r.error));
    clear(items, table(["#", "Question", "Expected", "Answer", "Support", "Correct", "Cited", "Refused", "ms", "Citations"],
      shown.map((r) => el("tr", { class: r.correct ? "eval-ok" : "eval-bad", dataset: { item: r.item.id } },
        el("td", { class: "num" }, r.position), el("td", {}, r.item.question),
        el("td", { class: "small" }, (r.item.answers || []).length ? r.item.answers.join(" | ") : "unanswerable", r.item.document ? el("div", { class: "muted" }, `${r.item.document}${r.item.page ? ` p${r.item.page}` : ""}`) : null),
        el("td", {}, r.error ? el("span", { class: "error small" }, r.error) : (r.short_answer ? el("strong", {}, r.short_answer) : null), r.answer ? el("div", { class: "small muted" }, r.answer.slice(0, 300)) : null),
        el("td", {}, (r.support || "").toLowerCase()), el("td", {}, yes(r.correct)), el("td", {}, yes(r.cited)), el("td", {}, yes(r.refused)),
        el("td", { class: "num" }, Math.round(r.latency_ms || 0)), el("td", { class: "small" }, citationsText(r)))),
      { "data-testid": "results" }));
  }
  filter.addEventListener("change", drawItems);

  async function load() {
    clearTimeout(timers.poll);
    try {
      const run = (await call(`/v1/eval-runs/${encodeURIComponent(runId)}`)).run;
      const listed = [];
      let token = "";
      do {
        const page = await call(`/v1/eval-runs/${encodeURIComponent(runId)}/items?page_size=1000${token ? `&page_token=${token}` : ""}`);
        listed.push(...(page.items || []));
        token = page.next_page_token || "";
      } while (token);
      results = listed;
      const cancel = run.state === RUNNING ? el("button", { type: "button", class: "danger", "data-testid": "cancel-run" }, "Cancel") : null;
      if (cancel) cancel.addEventListener("click", async () => { cancel.disabled = true; await call(`/v1/eval-runs/${encodeURIComponent(runId)}:cancel`, { body: {} }).catch((e) => head.append(errorBox(e))); load(); });
      const csv = el("button", { type: "button", class: "secondary", "data-testid": "export-csv" }, "Export CSV");
      csv.addEventListener("click", () => download(runId, "csv").catch((e) => head.append(errorBox(e))));
      const json = el("button", { type: "button", class: "secondary" }, "Export JSON");
      json.addEventListener("click", () => download(runId, "json").catch((e) => head.append(errorBox(e))));
      const identities = run.identities || {};
      clear(head, el("div", { class: "row" }, el("h1", {}, `Run ${run.label || run.run_id.slice(0, 8)}`), badge(run), progress(run), cancel, csv, json),
        el("p", {}, `Set ${run.set_name}; ${settingsText(run)}; started ${fmtDate(run.create_time)}${run.finish_time ? `, ended ${fmtDate(run.finish_time)}` : ""}.`),
        el("p", { class: "small muted" }, `Embedder ${identities.embedder || "?"}; engines ${(identities.answer_engines || []).join(", ") || "–"}.`),
        run.error ? el("div", { class: "error" }, run.error) : null);
      clear(totals, totalsTable(run));
      drawItems();
      if (run.state === RUNNING) timers.poll = setTimeout(load, 1000);
    } catch (error) {
      clear(head, errorBox(error));
    }
  }
  load();
  return () => clearTimeout(timers.poll);
}

// -- two runs side by side ----------------------------------------------------------------------------
function renderCompare(main, params) {
  const body = el("div", {}, spinner("Comparing"));
  const only = el("select", { "aria-label": "Show questions" }, ["changed", "all", "better", "worse"].map((v) => el("option", { value: v }, v)));
  clear(main, el("p", {}, el("a", { href: "#/evals" }, "← Evaluations")), el("div", { class: "row" }, el("h1", {}, "Two runs side by side"), only), body);
  let data = null;

  function draw() {
    const c = data;
    const left = overall(c.base);
    const right = overall(c.candidate);
    const change = (i) => enumLabel(i.change, "EVAL_CHANGE_");
    const shown = (c.items || []).filter((i) => only.value === "all" || (only.value === "changed" ? ["better", "worse", "added", "removed"].includes(change(i)) : change(i) === only.value));
    const cell = (r) => (r ? el("td", {}, r.error ? el("span", { class: "error small" }, r.error) : `${yes(r.correct)} correct, ${yes(r.cited)} cited${r.refused ? ", refused" : ""}`, el("div", { class: "small muted" }, (r.short_answer || r.answer || "").slice(0, 160))) : el("td", {}, "–"));
    clear(body,
      el("section", { class: "card", "aria-labelledby": "cmp-settings-h" }, el("h2", { id: "cmp-settings-h" }, "What differs"),
        (c.differences || []).length ? el("ul", { "data-testid": "differences" }, c.differences.map((d) => el("li", {}, el("code", {}, d.name), `: ${JSON.stringify(d.base)} → ${JSON.stringify(d.candidate)}`)))
          : el("p", { class: "muted", "data-testid": "differences" }, "Same settings and models.")),
      el("section", { class: "card", "aria-labelledby": "cmp-figures-h" }, el("h2", { id: "cmp-figures-h" }, "Figures"),
        table(["Figure", `Base: ${c.base.label || c.base.run_id.slice(0, 8)}`, `Candidate: ${c.candidate.label || c.candidate.run_id.slice(0, 8)}`, "Change"],
          FIGURES.map(([key, label]) => el("tr", {}, el("td", {}, label), el("td", { class: "num" }, rate(left[key])), el("td", { class: "num" }, rate(right[key])),
            el("td", { class: "num" }, (c.deltas || {})[key] === undefined ? "–" : `${c.deltas[key] >= 0 ? "+" : ""}${Number(c.deltas[key]).toFixed(3)}`))),
          { "data-testid": "figures" }),
        el("p", { "data-testid": "change-counts" }, `${c.better || 0} better, ${c.worse || 0} worse, ${c.same || 0} the same${c.added ? `, ${c.added} added` : ""}${c.removed ? `, ${c.removed} removed` : ""}.`)),
      el("section", { class: "card", "aria-labelledby": "cmp-items-h" }, el("h2", { id: "cmp-items-h" }, "Question by question"),
        shown.length ? table(["Question", "Change", "Base", "Candidate"], shown.map((i) => el("tr", { class: `change-${change(i)}`, dataset: { change: change(i) } },
          el("td", {}, i.question), el("td", {}, el("span", { class: `badge ${change(i) === "better" ? "ok" : change(i) === "worse" ? "bad" : ""}` }, change(i))), cell(i.base), cell(i.candidate))),
        { "data-testid": "comparison" }) : el("p", { class: "muted", "data-testid": "comparison" }, "No question changed.")));
  }
  only.addEventListener("change", () => data && draw());
  loadInto(body, "Comparing", () => call(`/v1/eval-runs:compare?base_run_id=${encodeURIComponent(params.get("base") || "")}&candidate_run_id=${encodeURIComponent(params.get("candidate") || "")}`),
    (c) => { data = c; setTimeout(draw); return spinner("Drawing"); });
}

export function render(main, route) {
  if (route.parts[1] === "run" && route.parts[2]) return renderRun(main, route.parts[2]);
  if (route.parts[1] === "compare") return renderCompare(main, route.params);
  return renderList(main);
}
