// The shell: hash routes to pages, the token field, and the navigation state.
import { getToken, setToken } from "./api.js";
import { clear, parseRoute } from "./ui.js";
import * as library from "./library.js";
import * as ask from "./ask.js";
import * as documentPage from "./document.js";
import * as graph from "./graph.js";
import * as system from "./system.js";
import * as evals from "./evals.js";
import * as settings from "./settings.js";
import * as sources from "./sources.js";

const PAGES = { library, ask, doc: documentPage, graph, system, sources, evals, settings };
const TITLES = {
  library: "Library", ask: "Ask", doc: "Document", graph: "Graph", system: "System", sources: "Sources",
  evals: "Evaluations", settings: "Settings",
};
let cleanup = null;
let shown = false;

function show() {
  const route = parseRoute(location.hash);
  const name = PAGES[route.parts[0]] ? route.parts[0] : "library";
  const main = document.getElementById("view");
  if (cleanup) {
    try {
      cleanup();
    } catch (error) {
      console.error(error);
    }
    cleanup = null;
  }
  document.querySelectorAll("nav a[data-page]").forEach((a) => {
    if (a.dataset.page === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  });
  document.title = `${TITLES[name]} · DocuThinker`;
  document.body.dataset.page = name;
  clear(main);
  cleanup = PAGES[name].render(main, route) || null;
  // After a route change the page's content takes focus (screen readers announce it; Tab goes on from there);
  // on the first load focus stays at the document's start, so the first Tab stop is the skip link.
  if (shown) main.focus({ preventScroll: true });
  shown = true;
}

function tokenForm() {
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  const state = document.getElementById("token-state");
  const say = () => {
    state.textContent = getToken() ? "A token is stored; it is sent with every call." : "No token stored (fine when auth is off).";
  };
  input.value = getToken();
  say();
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    setToken(input.value.trim());
    say();
    form.closest("details").open = false;
    show();
  });
  document.getElementById("token-clear").addEventListener("click", () => {
    input.value = "";
    setToken("");
    say();
    show();
  });
}

// `make run` prints the app's address with its token in the fragment (`/#token=...`): a fragment is never
// sent to a server. Store it, then drop it from the address bar and the history.
function tokenFromFragment() {
  const match = /^#token=([A-Za-z0-9._~-]+)$/.exec(location.hash);
  if (!match) return;
  setToken(match[1]);
  history.replaceState(null, "", `${location.pathname}${location.search}#/library`);
}

// The theme toggle (js/theme.js chose the theme before the page drew) and the skip link, which must not
// change the hash: the hash is the route.
function shell() {
  const toggle = document.getElementById("theme-toggle");
  toggle.addEventListener("click", () => window.docuthinkerTheme.toggle());
  window.docuthinkerTheme.apply();
  document.querySelector("a.skip").addEventListener("click", (e) => {
    e.preventDefault();
    // A page may name where its content starts for a keyboard (Ask: the question field).
    const main = document.getElementById("view");
    (main.querySelector("[data-skip-target]") || main).focus();
  });
}

window.addEventListener("hashchange", show);
tokenFromFragment();
shell();
tokenForm();
show();
