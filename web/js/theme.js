// Light or dark, before the page draws (a classic script in <head>, so there is no flash of the wrong theme):
// the choice made with the header's toggle (localStorage), else what the system prefers (prefers-color-scheme),
// followed live until a choice is made.
(function () {
  var KEY = "docuthinker.theme";
  var media = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  function chosen() {
    try { return localStorage.getItem(KEY) || ""; } catch (e) { return ""; }
  }
  function apply() {
    var theme = chosen() || (media && media.matches ? "dark" : "light");
    document.documentElement.dataset.theme = theme;
    var toggle = document.getElementById("theme-toggle");
    if (toggle) {
      toggle.setAttribute("aria-pressed", theme === "dark" ? "true" : "false");
      toggle.title = chosen() ? "Theme chosen here (click to switch)" : "Theme follows the system (click to choose)";
    }
  }
  window.docuthinkerTheme = {
    toggle: function () {
      var next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
      try { localStorage.setItem(KEY, next); } catch (e) { /* private mode: this page only */ }
      document.documentElement.dataset.theme = next;
      apply();
    },
    apply: apply,
  };
  if (media && media.addEventListener) media.addEventListener("change", apply);
  apply();
})();
