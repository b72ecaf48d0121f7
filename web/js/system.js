// System: health of each service, costs against budgets, circuit breakers and dead letters.
import { call } from "./api.js";
import { clear, el, enumLabel, errorBox, fmtDate, fmtMs, fmtUsd, loadInto } from "./ui.js";

function table(head, rows, empty = "None.") {
  if (!rows.length) return el("p", { class: "muted" }, empty);
  // Focusable: a table wider than a phone scrolls inside its box, and a keyboard must reach that scroll.
  return el("div", { class: "table-box", tabindex: "0", role: "region", "aria-label": head.filter(Boolean).join(", ") }, el("table", {}, el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, c ?? "")))))));
}

/** The local launcher's supervisor of a service: its state, restarts and how it last ended ("—" without one). */
function supervised(s) {
  if (!s.supervisor_state) return ["—", "—", "—"];
  const state = s.supervisor_state;
  return [badge(state, state === "running"), String(s.restarts || 0), s.last_exit || "—"];
}

function badge(text, good) {
  return el("span", { class: `badge ${good ? "ok" : "bad"}` }, text);
}

function budget(label, spent, limit) {
  const share = limit > 0 ? Math.min(1, spent / limit) : 0;
  return el("div", { class: "budget" }, el("span", {}, label), el("progress", { max: "1", value: String(share), "aria-label": label }),
    el("span", { class: "small" }, `${fmtUsd(spent)} of ${limit > 0 ? fmtUsd(limit) : "no limit"}`));
}

export function render(main) {
  const health = el("div");
  const costs = el("div");
  const circuits = el("div");
  const dlq = el("div");
  const refresh = el("button", { type: "button", class: "secondary" }, "Refresh");
  const card = (title, id, body) => el("section", { class: "card", "aria-labelledby": id }, el("h2", { id }, title), body);
  clear(main, el("div", { class: "row" }, el("h1", {}, "System"), refresh),
    el("div", { class: "system-grid" }, card("Services", "health-h", health), card("Costs and budgets", "costs-h", costs),
      card("Circuit breakers", "circuits-h", circuits), card("Dead letters", "dlq-h", dlq)));

  function load() {
    loadInto(health, "Checking services", () => call("/v1/health"), (h) => el("div", { "data-testid": "health" },
      el("p", {}, "Mesh: ", badge(h.status, h.status === "SERVING"), el("span", { class: "muted small" }, ` at ${fmtDate(h.time)}`)),
      table(["Service", "Status", "Address", "Latency", "Supervisor", "Restarts", "Last exit", "Detail"],
        (h.services || []).map((s) => [s.name, badge(s.status, s.status === "SERVING"), s.address, fmtMs(s.latency_ms), ...supervised(s), s.detail])),
      el("p", { class: "muted small" }, "Supervisor: the local launcher (make run) restarts a service that dies, within its restart budget; Last exit says why it died.")));
    loadInto(costs, "Loading costs", () => call("/v1/costs"), (c) => el("div", {},
      el("p", {}, `Period ${c.period}: ${fmtUsd(c.total_cost)} over ${c.total_requests} requests`, c.warning ? badge("near the budget", false) : null),
      budget("Mesh today", c.daily_spent, c.daily_budget), budget("Mesh this month", c.monthly_spent, c.monthly_budget),
      c.tenant ? budget(`Tenant ${c.tenant} today`, c.tenant_daily_spent, c.tenant_daily_budget) : null,
      c.tenant ? budget(`Tenant ${c.tenant} this month`, c.tenant_monthly_spent, c.tenant_monthly_budget) : null,
      el("h3", {}, "By provider"), table(["Provider", "Cost", "Requests"], Object.entries(c.by_provider || {}).map(([k, v]) => [k, fmtUsd(v.cost), v.requests])),
      el("h3", {}, "By intent"), table(["Intent", "Cost", "Requests"], Object.entries(c.by_intent || {}).map(([k, v]) => [k, fmtUsd(v.cost), v.requests]))));
    loadInto(circuits, "Loading circuits", () => call("/v1/circuits"), (r) => table(["Circuit", "State", "Failures", "Successes", "Total failures", "Opened"],
      (r.circuits || []).map((c) => { const s = enumLabel(c.state, "CIRCUIT_STATE_"); return [c.name, badge(s, s === "closed"), c.failures, c.successes, c.total_failures, fmtDate(c.opened_time)]; }), "No circuits yet."));
    loadInto(dlq, "Loading dead letters", () => call("/v1/dlq?limit=50"), (r) => el("div", {},
      el("p", {}, `${r.parked || 0} parked, ${r.retrying || 0} retrying, ${r.replayed || 0} replayed`),
      table(["Operation", "State", "Retries", "Last error", "Created", ""], (r.messages || []).map((m) => [m.operation, m.state, m.retry_count, m.last_error, fmtDate(m.create_time), replayButton(m)]), "No dead letters.")));
  }

  function replayButton(m) {
    const button = el("button", { type: "button", class: "secondary small" }, "Replay");
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        await call(`/v1/dlq/${encodeURIComponent(m.id)}:replay`, { body: {} });
      } catch (error) {
        dlq.prepend(errorBox(error));
      }
      load();
    });
    return button;
  }

  refresh.addEventListener("click", load);
  load();
}
