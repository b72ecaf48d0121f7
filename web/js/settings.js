// Settings: the OpenAI-compatible server (Ollama, llama.cpp's server, vLLM) that writes instead of the small local
// model, by URL. Saved on the server (an admin's call), checked first by listing its models, used by every service
// from its next call; "Forget" goes back to the local model.
import { call } from "./api.js";
import { clear, el, errorBox, loadInto, spinner } from "./ui.js";

const EXAMPLES = [
  ["Ollama", "http://127.0.0.1:11434/v1", "llama3.2"],
  ["llama.cpp server", "http://127.0.0.1:8080/v1", "any name"],
  ["vLLM", "http://HOST:8000/v1", "the served model"],
];

export function render(main) {
  const status = el("div", { "data-testid": "server-status", "aria-live": "polite" });
  const url = el("input", { type: "text", id: "server-url", inputmode: "url", spellcheck: "false", placeholder: "http://127.0.0.1:11434/v1" });
  const model = el("input", { type: "text", id: "server-model", spellcheck: "false", placeholder: "llama3.2" });
  const key = el("input", { type: "password", id: "server-key", autocomplete: "off", placeholder: "only if the server wants one" });
  const windowSize = el("input", { type: "number", id: "server-window", min: "512", step: "512", value: "8192", class: "narrow" });
  const save = el("button", { type: "submit" }, "Check and save");
  const forget = el("button", { type: "button", class: "secondary" }, "Forget (use the local model)");
  const result = el("div", { "aria-live": "polite", "data-testid": "server-result" });
  const form = el("form", { class: "settings-form" },
    el("label", { for: "server-url" }, "Server URL (OpenAI-compatible, ending in /v1)"), url,
    el("label", { for: "server-model" }, "Model"), model,
    el("label", { for: "server-key" }, "API key (optional)"), key,
    el("label", { for: "server-window" }, "Context window (tokens)"), windowSize,
    el("div", { class: "row" }, save, forget), result);

  clear(main, el("h1", {}, "Settings"),
    el("section", { class: "card", "aria-labelledby": "server-h" }, el("h2", { id: "server-h" }, "Language model server"),
      el("p", {}, "Rewrites, discussion points, recommendations, chat and the crew use a language model. Without one set here they run on a small model on this machine's CPU (slow, and plain). Point DocuThinker at a server on your machine or network instead; every service uses it from its next call."),
      status, form,
      el("h3", {}, "Examples"),
      el("ul", {}, EXAMPLES.map(([name, address, m]) => el("li", {}, el("strong", {}, name), `: ${address} (model: ${m})`))),
      el("p", { class: "muted small" }, "Choosing a server needs an admin token; anyone can see which is in use.")));

  function show(r) {
    const s = r.server || {};
    if (!r.configured) return el("p", {}, "In use: the local model (SmolLM2, on the CPU).");
    return el("div", {},
      el("p", {}, "In use: ", el("strong", {}, s.model), ` at ${s.base_url}`, r.source === "environment"
        ? " (set by the environment, OPENAI_BASE_URL or OPENAI_API_KEY: change it there)" : " (chosen here)"),
      r.problem ? el("div", { class: "error", role: "alert" }, `The server does not answer now: ${r.problem}`)
        : (r.models || []).length ? el("p", { class: "muted small" }, `It lists: ${r.models.join(", ")}`) : null);
  }

  function load() {
    loadInto(status, "Reading the setting", () => call("/v1/settings/model-server"), (r) => {
      const s = r.server || {};
      if (r.configured && r.source === "settings") {
        url.value = s.base_url;
        model.value = s.model;
        windowSize.value = String(s.context_window || 8192);
      }
      return show(r);
    });
  }

  async function send(body) {
    save.disabled = forget.disabled = true;
    clear(result, spinner(body.base_url ? "Asking the server for its models" : "Forgetting the server"));
    try {
      const r = await call("/v1/settings/model-server", { method: "PUT", body });
      clear(result, el("p", { class: "ok-text", "data-testid": "server-saved" }, r.configured
        ? `Saved: ${r.server.model} at ${r.server.base_url} (it lists ${(r.models || []).join(", ") || "no model"}).`
        : "Forgotten: the local model writes again."));
      load();
    } catch (error) {
      clear(result, errorBox(error, () => send(body)));
    } finally {
      save.disabled = forget.disabled = false;
    }
  }

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    send({ base_url: url.value.trim(), model: model.value.trim(), api_key: key.value.trim(),
      context_window: Number(windowSize.value || 8192) });
  });
  forget.addEventListener("click", () => send({ base_url: "" }));
  load();
}
