// Small DOM helpers shared by the pages. Formatting only: every figure comes from the API.

/** el("tag.class", {attr: value, onclick: fn}, ...children) */
export function el(spec, attrs = {}, ...children) {
  const [tag, ...classes] = spec.split(".");
  const node = document.createElement(tag);
  if (classes.length) node.className = classes.join(" ");
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else if (value === true) node.setAttribute(name, "");
    else node.setAttribute(name, String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function svg(tag, attrs = {}) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}

export function mount(...children) {
  const main = document.getElementById("main");
  main.replaceChildren();
  append(main, children);
  return main;
}

export function announce(text) { document.getElementById("status").textContent = text; }

export function num(value, digits = 3) {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "number") return String(value);
  if (Math.abs(value) >= 1e6 || (Math.abs(value) > 0 && Math.abs(value) < 1e-3)) return value.toExponential(2);
  return value.toLocaleString("en-US", { maximumFractionDigits: digits });
}
export function pct(value) { return value === null || value === undefined ? "–" : `${value >= 0 ? "+" : ""}${num(value, 2)}%`; }
export function pvalue(value) {
  if (value === null || value === undefined) return "–";
  return value < 1e-4 ? "< 0.0001" : value.toFixed(4);
}
export function when(ms) { return ms ? new Date(ms).toISOString().slice(0, 16).replace("T", " ") + " UTC" : "–"; }

/** A message for a failed call, with the API's field errors listed. */
export function errorBox(error) {
  const items = (error.errors || []).map((e) => el("li", {}, e.field ? `${e.field}: ${e.message}` : e.message));
  return el("div.alert", { role: "alert" }, el("strong", {}, error.message), items.length ? el("ul", {}, items) : null);
}

export function badge(text, cls = text) { return el("span.badge", { class: `badge ${cls}` }, text); }

/** Pagination controls from the API's `pagination` block. */
export function pager(pagination, go) {
  if (!pagination) return null;
  const { pageNumber, itemsPerPage, totalItems, nextPage, previousPage } = pagination;
  return el("div.pager", { role: "navigation", "aria-label": "Pages" },
    el("button.secondary", { type: "button", disabled: !previousPage, onclick: () => go(pageNumber - 1) }, "Previous"),
    el("span", {}, `Page ${pageNumber} · ${totalItems} in all · ${itemsPerPage} a page`),
    el("button.secondary", { type: "button", disabled: !nextPage, onclick: () => go(pageNumber + 1) }, "Next"));
}

export function field(label, input, hint) {
  const id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  input.id = id;
  const error = el("p.field-error", { id: `${id}-error`, hidden: true });
  input.setAttribute("aria-describedby", `${id}-error`);
  return el("div.field", { dataset: { field: input.name || "" } }, el("label", { for: id }, label), hint ? el("div.muted", {}, hint) : null, input, error);
}

/** Show the API's field errors beside the inputs whose `name` the field starts with; the rest in a box. */
export function showFieldErrors(form, error, box) {
  for (const p of form.querySelectorAll(".field-error")) { p.hidden = true; p.textContent = ""; }
  for (const i of form.querySelectorAll("[aria-invalid]")) i.removeAttribute("aria-invalid");
  const leftover = [];
  let first = null;
  for (const e of error.errors || []) {
    const root = (e.field || "").split(/[.[]/)[0];
    const input = form.querySelector(`[name="${CSS.escape(e.field)}"]`) || form.querySelector(`[name="${CSS.escape(root)}"]`);
    if (!input) { leftover.push(e); continue; }
    let p = input.id && document.getElementById(`${input.id}-error`);
    if (!p) {
      input.id = input.id || `f-${Math.random().toString(36).slice(2, 9)}`;
      p = el("p.field-error", { id: `${input.id}-error` });
      input.after(p);
      input.setAttribute("aria-describedby", p.id);
    }
    p.hidden = false;
    p.textContent = (p.textContent ? p.textContent + " " : "") + `${e.field}: ${e.message}`;
    input.setAttribute("aria-invalid", "true");
    first = first || input;
  }
  box.replaceChildren();
  if (leftover.length || !(error.errors || []).length) box.append(errorBox({ message: error.message, errors: leftover }));
  if (first) first.focus();
}
