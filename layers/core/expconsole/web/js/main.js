// The console's router: hash routes (#/experiments, #/experiments/<id>/results, ...), so one static
// page serves every view and no key or data ever goes into a URL the server sees.
import { api, clearKey, getKey, setKey, ApiError, newNavigation } from "./api.js";
import { el, mount, errorBox, field } from "./ui.js";
import { experimentsPage, experimentFormPage, experimentPage } from "./experiments.js";
import { resultsPage } from "./results.js";
import { gatesPage, gatePage } from "./gates.js";
import { eventsPage } from "./events.js";
import { holdoutsPage, holdoutPage } from "./holdouts.js";

const routes = [
  [/^experiments$/, () => experimentsPage],
  [/^experiments\/new$/, () => experimentFormPage],
  [/^experiments\/([^/]+)\/edit$/, () => experimentFormPage],
  [/^experiments\/([^/]+)\/results$/, () => resultsPage],
  [/^experiments\/([^/]+)$/, () => experimentPage],
  [/^gates$/, () => (p, q) => gatesPage("gates", q)],
  [/^gates\/([^/]+)$/, () => (p, q) => gatePage("gates", p, q)],
  [/^configs$/, () => (p, q) => gatesPage("configs", q)],
  [/^configs\/([^/]+)$/, () => (p, q) => gatePage("configs", p, q)],
  [/^events$/, () => eventsPage],
  [/^events\/([^/]+)$/, () => eventsPage],
  [/^holdouts$/, () => holdoutsPage],
  [/^holdouts\/([^/]+)$/, () => holdoutPage],
];

/** The current route: path (without the leading #/) and its query as URLSearchParams. */
export function current() {
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?");
  return { path: path || "experiments", query: new URLSearchParams(query || "") };
}

/** Go to a route; `query` is an object of non-empty values. */
export function go(path, query = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const hash = `#/${path}${[...q].length ? "?" + q : ""}`;
  if (location.hash === hash) render(); else location.hash = hash;
}

function signIn(reason) {
  document.getElementById("nav").hidden = true;
  const input = el("input", { type: "password", name: "key", autocomplete: "off", required: true, spellcheck: "false" });
  const box = el("div");
  const form = el("form.panel", { "aria-labelledby": "signin-title", onsubmit: async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    setKey(key);
    try {
      await api("GET", "/experiments", { query: { limit: 1 } });
      const { path } = current();
      if (path === "signin") go("experiments"); else render();
    } catch (error) {
      clearKey();
      const message = error instanceof ApiError && (error.status === 401 || error.status === 403)
        ? "This key is not a console key (the API refused it)." : error.message;
      box.replaceChildren(errorBox({ message, errors: [] }));
      input.setAttribute("aria-invalid", "true");
      input.focus();
    }
  } },
    el("h1", { id: "signin-title" }, "Sign in"),
    el("p", {}, "Paste a console key (console-…). It is kept in this tab only (sessionStorage) and sent in the SERVICE-API-KEY header."),
    field("Console key", input), box,
    el("button", { type: "submit" }, "Sign in"));
  mount(reason ? el("div.note", {}, reason) : null, form);
  input.focus();
}

export async function render() {
  newNavigation();
  delete document.body.dataset.rendered;
  if (!getKey()) return signIn();
  document.getElementById("nav").hidden = false;
  const { path, query } = current();
  if (path === "signin") return go("experiments");
  for (const a of document.querySelectorAll("#nav a")) {
    const section = a.getAttribute("href").slice(2);
    if (path.split("/")[0] === section) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  for (const [pattern, page] of routes) {
    const match = path.match(pattern);
    if (!match) continue;
    const params = match.slice(1).map(decodeURIComponent);
    try {
      await page()(params, query);
    } catch (error) {
      if (error.name === "AbortError") return; // left for another page
      if (error instanceof ApiError && error.status === 401) { clearKey(); return signIn("Your key was refused: sign in again."); }
      mount(errorBox(error));
    }
    document.getElementById("main").focus({ preventScroll: true });
    document.body.dataset.rendered = location.hash; // the page for this address is drawn (tests wait on it)
    return;
  }
  mount(el("h1", {}, "Not found"), el("p", {}, "No page at this address. "), el("a", { href: "#/experiments" }, "Experiments"));
}

document.getElementById("sign-out").addEventListener("click", () => { clearKey(); location.hash = "#/signin"; signIn(); });
window.addEventListener("hashchange", render);
render();
