// Sources: places kept in sync (a folder, an IMAP mailbox, a WebDAV share, a Git branch), each with its status
// (last run, items new/changed/deleted/failed, next run, errors with reasons), sync now, pause, remove, and a
// form to add one. The list refreshes every few seconds while the page is open.
import { call } from "./api.js";
import { clear, el, enumLabel, errorBox, fmtDate, loadInto } from "./ui.js";

const KINDS = {
  folder: {
    label: "Folder",
    fields: [["path", "Folder path (on the server, under its allowed roots)", "text", true]],
    credential: false,
  },
  imap: {
    label: "IMAP mailbox",
    fields: [["host", "Host", "text", true], ["port", "Port (0: 993 with TLS, 143 otherwise)", "number", false],
      ["security", "Security", "select", false], ["username", "User name", "text", true],
      ["mailboxes", "Mailboxes (comma separated; empty: INBOX)", "text", false]],
    credential: true,
  },
  webdav: {
    label: "WebDAV share",
    fields: [["url", "Share URL", "url", true], ["username", "User name", "text", false]],
    credential: true,
  },
  git: {
    label: "Git branch",
    fields: [["url", "Repository URL", "text", true], ["branch", "Branch (empty: the default one)", "text", false],
      ["username", "User name (https)", "text", false]],
    credential: true,
  },
};
const SECURITY = ["IMAP_SECURITY_TLS", "IMAP_SECURITY_STARTTLS", "IMAP_SECURITY_NONE"];

function where(source) {
  for (const kind of Object.keys(KINDS)) {
    const c = source[kind];
    if (!c) continue;
    if (kind === "folder") return `folder ${c.path}`;
    if (kind === "imap") return `IMAP ${c.username}@${c.host}${c.port ? `:${c.port}` : ""}`;
    if (kind === "webdav") return `WebDAV ${c.url}`;
    return `Git ${c.url}${c.branch ? ` (${c.branch})` : ""}`;
  }
  return "";
}

function stateBadge(source) {
  const state = enumLabel(source.status?.state, "SOURCE_STATE_");
  const good = state === "ok";
  const cls = good ? "ok" : state === "running" || state === "pending" ? "" : "bad";
  return el("span", { class: `badge ${cls}`, "data-testid": "source-state" }, source.paused ? `${state} (paused)` : state);
}

function lastRun(status) {
  if (!status?.last_run_end_time) return "";
  const r = status.last_run || {};
  return `seen ${r.seen || 0}: +${r.added || 0} new, ${r.changed || 0} changed, ${r.deleted || 0} deleted, ${r.failed || 0} failed`;
}

function details(source) {
  const status = source.status || {};
  const parts = [];
  if (status.error_reason) {
    parts.push(el("p", { class: "error", role: "status" }, `${status.error_reason}: ${status.error_message || ""}`));
  }
  if ((status.item_errors || []).length) {
    parts.push(el("p", {}, `${status.failing_items} item(s) failing, retried with backoff:`));
    parts.push(el("ul", {}, status.item_errors.map((e) => el("li", {},
      el("code", {}, e.item), ` ${e.reason}: ${e.message} (attempt ${e.attempts}, next ${fmtDate(e.next_attempt_time)})`))));
  }
  parts.push(el("p", { class: "muted small" }, `Last run ${fmtDate(status.last_run_start_time)} – ${fmtDate(status.last_run_end_time)}; `
    + `last success ${fmtDate(status.last_success_time) || "never"}; credential ${source.has_credential ? "stored (encrypted)" : "none"}`
    + (status.cursor ? `; at ${status.cursor}` : "")));
  return parts;
}

function sourceRow(source, reload, onError) {
  const act = (label, run) => {
    const button = el("button", { type: "button", class: "secondary small" }, label);
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await run();
      } catch (error) {
        onError(error);
      }
      reload();
    });
    return button;
  };
  const id = encodeURIComponent(source.source_id);
  const actions = el("div", { class: "row" },
    act("Sync now", () => call(`/v1/sources/${id}:sync`, { body: {} })),
    source.paused
      ? act("Resume", () => call(`/v1/sources/${id}?update_mask=paused`, { method: "PATCH", body: { paused: false } }))
      : act("Pause", () => call(`/v1/sources/${id}?update_mask=paused`, { method: "PATCH", body: { paused: true } })),
    act("Remove", async () => {
      if (!confirm(`Remove the source "${source.name}" and delete its documents?`)) return;
      await call(`/v1/sources/${id}`, { method: "DELETE" });
    }));
  return el("tr", { "data-source": source.source_id },
    el("td", {}, el("details", {}, el("summary", {}, source.name), ...details(source))),
    el("td", {}, where(source)),
    el("td", {}, stateBadge(source)),
    el("td", {}, lastRun(source.status)),
    el("td", {}, String(source.status?.documents || 0)),
    el("td", {}, String(source.status?.failing_items || 0)),
    el("td", {}, fmtDate(source.status?.next_run_time)),
    el("td", {}, actions));
}

function addForm(onAdded, onError) {
  const kind = el("select", { id: "source-kind" }, Object.entries(KINDS).map(([k, v]) => el("option", { value: k }, v.label)));
  const name = el("input", { id: "source-name", required: true, maxlength: "200" });
  const interval = el("input", { id: "source-interval", type: "number", min: "0", value: "0" });
  const specific = el("div", { class: "source-fields" });
  const credential = el("input", { id: "source-credential", type: "password", autocomplete: "new-password" });
  const credentialRow = el("p", {}, el("label", { for: "source-credential" }, "Password or token (stored encrypted, never shown again)"), credential);
  const inputs = {};
  function fill() {
    const spec = KINDS[kind.value];
    clear(specific, spec.fields.map(([field, label, type, required]) => {
      const id = `source-${field}`;
      const input = type === "select"
        ? el("select", { id }, SECURITY.map((s) => el("option", { value: s }, enumLabel(s, "IMAP_SECURITY_"))))
        : el("input", { id, type, required: required || undefined });
      inputs[field] = input;
      return el("p", {}, el("label", { for: id }, label), input);
    }));
    credentialRow.hidden = !spec.credential;
  }
  kind.addEventListener("change", fill);
  fill();
  const form = el("form", { class: "card", "aria-labelledby": "add-source-h" },
    el("h2", { id: "add-source-h" }, "Add a source"),
    el("p", {}, el("label", { for: "source-kind" }, "Kind"), kind),
    el("p", {}, el("label", { for: "source-name" }, "Name"), name),
    specific, credentialRow,
    el("p", {}, el("label", { for: "source-interval" }, "Seconds between syncs (0: the default)"), interval),
    el("button", { type: "submit" }, "Add and sync"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const config = {};
    for (const [field, , type] of KINDS[kind.value].fields) {
      const value = inputs[field].value.trim();
      if (!value) continue;
      config[field] = field === "mailboxes" ? value.split(",").map((m) => m.trim()).filter(Boolean) : type === "number" ? Number(value) : value;
    }
    const body = { name: name.value.trim(), interval_seconds: Number(interval.value || 0), [kind.value]: config };
    if (KINDS[kind.value].credential && credential.value) body.credential = credential.value;
    try {
      await call("/v1/sources", { body });
      form.reset();
      fill();
      onAdded();
    } catch (error) {
      onError(error);
    }
  });
  return form;
}

export function render(main) {
  const list = el("div", { "data-testid": "sources" });
  const problems = el("div", { "aria-live": "polite" });
  const onError = (error) => problems.replaceChildren(errorBox(error));
  function load(quiet = false) {
    const show = (r) => {
      const sources = r.sources || [];
      if (!sources.length) return el("p", { class: "muted" }, "No sources yet: add a folder, a mailbox, a share or a repository below.");
      return el("table", {}, el("thead", {}, el("tr", {}, ["Name", "Where", "State", "Last run", "Documents", "Failing", "Next run", ""]
        .map((h) => el("th", { scope: "col" }, h)))), el("tbody", {}, sources.map((s) => sourceRow(s, () => load(true), onError))));
    };
    if (quiet) {
      // A refresh keeps the table in place (and any opened details) unless it changed.
      call("/v1/sources?page_size=100").then((r) => {
        const open = new Set([...list.querySelectorAll("details[open]")].map((d) => d.closest("tr")?.dataset.source));
        clear(list, show(r));
        list.querySelectorAll("tr[data-source]").forEach((tr) => {
          if (open.has(tr.dataset.source)) tr.querySelector("details").open = true;
        });
      }).catch(onError);
      return;
    }
    loadInto(list, "Loading sources", () => call("/v1/sources?page_size=100"), show);
  }
  const refresh = el("button", { type: "button", class: "secondary" }, "Refresh");
  refresh.addEventListener("click", () => load());
  clear(main, el("div", { class: "row" }, el("h1", {}, "Sources"), refresh),
    el("p", { class: "muted" }, "Each item of a source is a document; a changed item becomes a new version of it, a removed one is deleted."),
    problems, el("section", { class: "card", "aria-label": "Sources" }, list), addForm(() => load(true), onError));
  load();
  const timer = setInterval(() => load(true), 3000);
  return () => clearInterval(timer);
}
