// Feature gates and dynamic configs: list with filters, read, rules in words, enable/disable, versions diff.
import { api } from "./api.js";
import { go } from "./main.js";
import { el, mount, pager, badge, errorBox, field, when, announce } from "./ui.js";

const KINDS = {
  gates: { path: "/gates", title: "Feature gates", one: "gate", route: "gates" },
  configs: { path: "/dynamic_configs", title: "Dynamic configs", one: "dynamic config", route: "configs" },
};
const GATE_TYPES = ["PERMANENT", "TEMPORARY", "STALE", "TEMPLATE", "NONE"];

export async function gatesPage(kind, query) {
  const k = KINDS[kind];
  const filters = { tags: query.get("tags") || "", type: query.get("type") || "", includeArchived: query.get("includeArchived") || "", page: query.get("page") || "1" };
  const apiFilters = { ...filters, limit: 20 };
  if (kind !== "gates") delete apiFilters.type;
  const list = await api("GET", k.path, { query: apiFilters });
  const tags = el("input", { type: "text", name: "tags", value: filters.tags, placeholder: "tag, tag" });
  const type = el("select", { name: "type" }, el("option", { value: "" }, "Any type"), GATE_TYPES.map((t) => el("option", { value: t, selected: t === filters.type }, t)));
  const archived = el("input", { type: "checkbox", name: "includeArchived", checked: filters.includeArchived === "true" });
  const form = el("form.panel.row", { role: "search", "aria-label": `Filter ${k.title.toLowerCase()}`, onsubmit: (e) => {
    e.preventDefault();
    go(k.route, { tags: tags.value.trim(), type: kind === "gates" ? type.value : "", includeArchived: archived.checked ? "true" : "" });
  } }, field("Tags", tags), kind === "gates" ? field("Type", type) : null,
  el("label.inline", {}, archived, "Include archived"), el("button", { type: "submit" }, "Filter"));
  const rows = list.data.map((g) => el("tr", { dataset: { id: g.id } },
    el("td", {}, el("a", { href: `#/${k.route}/${encodeURIComponent(g.id)}` }, g.name)),
    el("td", {}, badge(g.status || (g.isEnabled ? "enabled" : "disabled"))),
    el("td", {}, g.type ? `${g.type}${g.typeReason && g.typeReason !== "NONE" ? ` (${g.typeReason})` : ""}` : "–"),
    el("td.num", {}, String((g.rules || []).length)),
    el("td.hide-narrow", {}, (g.tags || []).join(", ")),
    el("td.hide-narrow", {}, when(g.lastModifiedTime))));
  mount(el("h1", {}, k.title), form,
    list.data.length ? el("div.table-wrap", {}, el("table", { id: `${k.route}-list` }, el("caption.sr-only", {}, k.title),
      el("thead", {}, el("tr", {}, ["Name", "Status", "Type", "Rules", "Tags", "Modified"].map((h, i) => el("th", { scope: "col", class: i === 3 ? "num" : i > 3 ? "hide-narrow" : null }, h)))),
      el("tbody", {}, rows))) : el("p", { id: "none" }, `No ${k.one} matches.`),
    pager(list.pagination, (page) => go(k.route, { ...filters, page })));
}

const OPERATORS = {
  any: "is any of", none: "is none of", any_case_sensitive: "is any of (case-sensitive)", none_case_sensitive: "is none of (case-sensitive)",
  str_starts_with_any: "starts with any of", str_ends_with_any: "ends with any of", str_contains_any: "contains any of", str_contains_none: "contains none of",
  gt: "is greater than", gte: "is at least", lt: "is less than", lte: "is at most",
  version_gt: "is a version after", version_gte: "is version or later", version_lt: "is a version before", version_lte: "is version or earlier", version_eq: "is version", version_neq: "is not version",
  before: "is before", after: "is after", on: "is on the day of", eq: "equals", neq: "does not equal", str_matches: "matches the pattern",
};

/** One condition as a sentence, e.g. "Country is any of US, CA". */
export function conditionInWords(c) {
  const subject = c.type === "custom_field" ? `Field “${c.field}”` : c.type.replace(/_/g, " ").replace(/^./, (s) => s.toUpperCase());
  if (c.type === "public") return "Everyone";
  if (c.type === "passes_gate" || c.type === "fails_gate") return `${c.type === "passes_gate" ? "Passes" : "Fails"} gate ${c.targetValue}`;
  if (c.type === "passes_segment" || c.type === "fails_segment") return `${c.type === "passes_segment" ? "In" : "Not in"} segment ${c.targetValue}`;
  let value = c.targetValue;
  if (["before", "after", "on"].includes(c.operator) && typeof value === "number") value = new Date(value).toISOString();
  if (Array.isArray(value)) value = value.join(", ");
  return `${subject} ${OPERATORS[c.operator] || c.operator} ${value}`;
}

function ruleItem(rule, kind) {
  const conditions = rule.conditions.length ? rule.conditions.map(conditionInWords).join(" and ") : "Everyone";
  return el("li", { dataset: { rule: rule.id } },
    el("strong", {}, rule.name), `: ${conditions}`,
    rule.environments ? ` (environments: ${rule.environments.join(", ")})` : "",
    el("div", {}, kind === "gates" ? `${rule.passPercentage}% pass` : `${rule.passPercentage}% get `,
      kind === "configs" ? el("code", {}, JSON.stringify(rule.returnValue)) : null));
}

/** A line diff of two JSON documents (longest common subsequence of their lines). */
export function lineDiff(a, b) {
  const x = a.split("\n"), y = b.split("\n");
  const m = x.length, n = y.length;
  const t = Array.from({ length: m + 1 }, () => new Int32Array(n + 1));
  for (let i = m - 1; i >= 0; i--) for (let j = n - 1; j >= 0; j--) t[i][j] = x[i] === y[j] ? t[i + 1][j + 1] + 1 : Math.max(t[i + 1][j], t[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < m || j < n) {
    if (i < m && j < n && x[i] === y[j]) { out.push([" ", x[i]]); i++; j++; }
    else if (i < m && (j >= n || t[i + 1][j] >= t[i][j + 1])) { out.push(["-", x[i]]); i++; }
    else { out.push(["+", y[j]]); j++; }
  }
  return out;
}

export async function gatePage(kind, params) {
  const k = KINDS[kind];
  const id = params[0];
  const enc = encodeURIComponent(id);
  const [doc, versions] = await Promise.all([
    api("GET", `${k.path}/${enc}`), api("GET", `${k.path}/${enc}/versions`, { query: { limit: 100 } }),
  ]);
  const g = doc.data;
  const box = el("div");
  const act = async (action) => {
    try { await api("PUT", `${k.path}/${enc}/${action}`); announce(`${action}d.`); gatePage(kind, params); }
    catch (error) { box.replaceChildren(errorBox(error)); }
  };
  const list = versions.data;
  const label = (v) => `v${v.version} · ${when(v.lastModifiedTime)}`;
  const older = el("select", { name: "from" }, list.map((v, i) => el("option", { value: i, selected: i === Math.min(1, list.length - 1) }, label(v))));
  const newer = el("select", { name: "to" }, list.map((v, i) => el("option", { value: i, selected: i === 0 }, label(v))));
  const diffBox = el("div.diff", { id: "diff", "aria-live": "polite" });
  const showDiff = () => {
    const a = JSON.stringify(list[older.value], null, 2), b = JSON.stringify(list[newer.value], null, 2);
    diffBox.replaceChildren(...lineDiff(a, b).filter(([s]) => s !== " ").map(([s, line]) => el("span", { class: s === "+" ? "add" : "del" }, `${s} ${line}`)));
    if (!diffBox.children.length) diffBox.textContent = "No difference.";
  };
  older.addEventListener("change", showDiff);
  newer.addEventListener("change", showDiff);
  mount(
    el("h1", {}, g.name, " ", badge(g.status || (g.isEnabled ? "enabled" : "disabled"))),
    el("p", {}, g.description || ""),
    el("div.row", { role: "group", "aria-label": "Actions" },
      el("button", { type: "button", disabled: !!g.isEnabled, onclick: () => act("enable") }, "Enable"),
      el("button.secondary", { type: "button", disabled: !g.isEnabled, onclick: () => act("disable") }, "Disable")), box,
    kind === "configs" ? el("p", {}, "Default value: ", el("code", {}, JSON.stringify(g.defaultValue))) : null,
    el("h2", {}, "Rules, in order"),
    g.rules.length ? el("ol.rules", { id: "rules" }, g.rules.map((r) => ruleItem(r, kind))) : el("p", {}, "No rules: nobody passes."),
    el("h2", {}, "Versions"),
    list.length > 1 ? el("div.panel", {}, el("div.row", {}, field("From", older), field("To", newer)), diffBox) : el("p", {}, "Only one version."));
  if (list.length > 1) showDiff();
}
