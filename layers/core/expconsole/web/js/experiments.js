// Experiments: the list (filters, paging), the create/edit form and the lifecycle buttons.
import { api } from "./api.js";
import { go } from "./main.js";
import { el, mount, pager, badge, errorBox, field, showFieldErrors, when, num, announce } from "./ui.js";

const STATUSES = ["setup", "active", "decision_made", "abandoned", "archived"];

export async function experimentsPage(_params, query) {
  const filters = {
    status: query.get("status") || "", tags: query.get("tags") || "", layerID: query.get("layerID") || "",
    searchString: query.get("searchString") || "", page: query.get("page") || "1",
  };
  const [list, layers] = await Promise.all([
    api("GET", "/experiments", { query: { ...filters, limit: 20 } }),
    api("GET", "/layers", { query: { limit: 1000 } }),
  ]);
  const status = el("select", { name: "status" }, el("option", { value: "" }, "Any but archived"),
    STATUSES.map((s) => el("option", { value: s, selected: s === filters.status }, s)));
  const tags = el("input", { type: "text", name: "tags", value: filters.tags, placeholder: "tag, tag" });
  const layer = el("select", { name: "layerID" }, el("option", { value: "" }, "Any layer"),
    layers.data.map((l) => el("option", { value: l.id, selected: l.id === filters.layerID }, l.name || l.id)));
  const text = el("input", { type: "search", name: "searchString", value: filters.searchString, placeholder: "id, name, description" });
  const form = el("form.panel.row", { role: "search", "aria-label": "Filter experiments", onsubmit: (e) => {
    e.preventDefault();
    go("experiments", { status: status.value, tags: tags.value.trim(), layerID: layer.value, searchString: text.value.trim() });
  } }, field("Status", status), field("Tags", tags), field("Layer", layer), field("Text", text),
  el("button", { type: "submit" }, "Filter"));

  const rows = list.data.map((x) => el("tr", { dataset: { id: x.id } },
    el("td", {}, el("a", { href: `#/experiments/${encodeURIComponent(x.id)}` }, x.name)),
    el("td", {}, badge(x.status)),
    el("td.num", {}, num(x.qualityScore && x.qualityScore.score, 1)),
    el("td", {}, badge(x.healthCheckStatus || "–", x.healthCheckStatus)),
    el("td.hide-narrow", {}, when(x.startTime)),
    el("td.hide-narrow", {}, (x.tags || []).join(", ")),
    el("td", {}, el("a", { href: `#/experiments/${encodeURIComponent(x.id)}/results`, "aria-label": `Results of ${x.name}` }, "Results"))));
  mount(
    el("div.row", {}, el("h1", {}, "Experiments"), el("a.button", { href: "#/experiments/new" }, "New experiment")),
    form,
    list.data.length ? el("div.table-wrap", {}, el("table", { id: "experiments" },
      el("caption.sr-only", {}, "Experiments"),
      el("thead", {}, el("tr", {}, ["Name", "Status", "Quality", "Health", "Started", "Tags", ""].map((h, i) =>
        el("th", { scope: "col", class: i === 2 ? "num" : i === 4 || i === 5 ? "hide-narrow" : null }, h)))),
      el("tbody", {}, rows))) : el("p", { id: "no-experiments" }, "No experiment matches."),
    pager(list.pagination, (page) => go("experiments", { ...filters, page })));
}

function metricsText(list) { return (list || []).map((m) => `${m.name}::${m.type}`).join("\n"); }
function metricsOf(text) {
  return text.split("\n").map((l) => l.trim()).filter(Boolean).map((line) => {
    const at = line.lastIndexOf("::");
    return at < 0 ? { name: line, type: "" } : { name: line.slice(0, at), type: line.slice(at + 2) };
  });
}

export async function experimentFormPage(params) {
  const editing = params.length ? (await api("GET", `/experiments/${encodeURIComponent(params[0])}`)).data : null;
  const v = editing || { name: "", description: "", hypothesis: "", idType: "userID", duration: 14, tags: [],
    groups: [{ name: "Control", id: "control", size: 50 }, { name: "Test", id: "test", size: 50 }],
    defaultConfidenceInterval: "95", sequentialTesting: false, bonferroniCorrection: false };
  const input = (name, value, attrs = {}) => el("input", { type: "text", name, value: value ?? "", ...attrs });
  const groupRows = el("tbody");
  const addGroup = (g, i) => groupRows.append(el("tr", {},
    el("td", {}, el("input", { type: "text", name: `groups[${i}].name`, value: g.name, "aria-label": `Group ${i + 1} name` })),
    el("td", {}, el("input", { type: "text", name: `groups[${i}].id`, value: g.id || "", "aria-label": `Group ${i + 1} id` })),
    el("td", {}, el("input", { type: "number", name: `groups[${i}].size`, value: g.size, step: "any", "aria-label": `Group ${i + 1} size (percent)` }))));
  v.groups.forEach(addGroup);
  const groupsBox = el("div.field", {}, el("span", { id: "groups-label", class: "label" }, el("strong", {}, "Groups")),
    el("table", { "aria-labelledby": "groups-label" }, el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Id"), el("th", {}, "Size %"))), groupRows),
    el("button.secondary", { type: "button", onclick: () => addGroup({ name: "", id: "", size: 0 }, groupRows.children.length) }, "Add a group"),
    el("input", { type: "hidden", name: "groups", id: "groups-any" }), el("p.field-error", { id: "groups-any-error", hidden: true }));
  const confidence = el("select", { name: "defaultConfidenceInterval" },
    ["80", "90", "95", "98", "99"].map((c) => el("option", { value: c, selected: c === v.defaultConfidenceInterval }, `${c}%`)));
  const checkbox = (name, label) => el("div.field", {}, el("label.inline", {},
    el("input", { type: "checkbox", name, checked: !!v[name] }), label));
  const box = el("div");
  const form = el("form.panel", { novalidate: true, "aria-label": editing ? "Edit experiment" : "New experiment" },
    field("Name", input("name", v.name, { required: true })),
    editing ? null : field("Id (optional)", input("id", ""), "Defaults to the name in lower case with underscores."),
    field("Description", el("textarea", { name: "description" }, v.description || "")),
    field("Hypothesis", el("textarea", { name: "hypothesis" }, v.hypothesis || "")),
    field("Id type", input("idType", v.idType)),
    field("Tags", input("tags", (v.tags || []).join(", ")), "Comma-separated."),
    groupsBox,
    field("Primary metrics", el("textarea", { name: "primaryMetrics" }, metricsText(v.primaryMetrics)), "One metric a line, as name::type (e.g. purchase::event_count)."),
    field("Secondary metrics", el("textarea", { name: "secondaryMetrics" }, metricsText(v.secondaryMetrics))),
    el("h2", {}, "Statistics"),
    field("Planned duration (days)", el("input", { type: "number", name: "duration", value: v.duration, step: "1" })),
    field("Confidence", confidence),
    checkbox("sequentialTesting", "Sequential testing"),
    checkbox("bonferroniCorrection", "Bonferroni correction across variants"),
    checkbox("benjaminiHochbergPerMetric", "Benjamini–Hochberg across metrics"),
    box,
    el("div.row", {}, el("button", { type: "submit" }, editing ? "Save" : "Create"),
      el("a", { href: editing ? `#/experiments/${encodeURIComponent(editing.id)}` : "#/experiments" }, "Cancel")));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const f = new Proxy({}, { get: (_, name) => form.elements.namedItem(name) });
    const numberOf = (text) => (text.trim() === "" ? null : Number(text));
    const body = {
      name: f.name.value, description: f.description.value, hypothesis: f.hypothesis.value, idType: f.idType.value,
      tags: f.tags.value.split(",").map((t) => t.trim()).filter(Boolean),
      groups: [...groupRows.children].map((_, i) => {
        const g = { name: f[`groups[${i}].name`].value, size: numberOf(f[`groups[${i}].size`].value) };
        if (f[`groups[${i}].id`].value.trim()) g.id = f[`groups[${i}].id`].value.trim();
        return g;
      }),
      primaryMetrics: metricsOf(f.primaryMetrics.value), secondaryMetrics: metricsOf(f.secondaryMetrics.value),
      duration: numberOf(f.duration.value), defaultConfidenceInterval: f.defaultConfidenceInterval.value,
      sequentialTesting: f.sequentialTesting.checked, bonferroniCorrection: f.bonferroniCorrection.checked,
      benjaminiHochbergPerMetric: f.benjaminiHochbergPerMetric.checked,
    };
    if (!editing && f.id.value.trim()) body.id = f.id.value.trim();
    if (editing) {
      for (const key of Object.keys(body)) if (JSON.stringify(body[key]) === JSON.stringify(pick(editing, key))) delete body[key];
      body.version = editing.version;
    }
    try {
      const saved = editing
        ? await api("PATCH", `/experiments/${encodeURIComponent(editing.id)}`, { body })
        : await api("POST", "/experiments", { body });
      announce(editing ? "Saved." : "Created.");
      go(`experiments/${encodeURIComponent(saved.data.id)}`);
    } catch (error) {
      showFieldErrors(form, error, box);
    }
  });
  mount(el("h1", {}, editing ? `Edit ${editing.name}` : "New experiment"), form);
}

function pick(doc, key) {
  if (key === "groups") return doc.groups.map((g) => ({ name: g.name, size: g.size, id: g.id }));
  if (key.endsWith("Metrics")) return (doc[key] || []).map((m) => ({ name: m.name, type: m.type }));
  return doc[key];
}

const ACTIONS = [
  ["start", "Start", null],
  ["make_decision", "Make decision", "decision"],
  ["abandon", "Abandon", "reason"],
  ["reset", "Reset to setup", null],
  ["archive", "Archive", null],
  ["unarchive", "Unarchive", null],
];

export async function experimentPage(params) {
  const id = params[0];
  const x = (await api("GET", `/experiments/${encodeURIComponent(id)}`)).data;
  const box = el("div", { id: "lifecycle-result" });
  const reason = el("input", { type: "text", name: "decisionReason", placeholder: "Why" });
  const launch = el("select", { name: "launch" }, x.groups.map((g) => el("option", { value: g.id }, g.name)));
  const act = async (action, needs) => {
    let body;
    if (needs === "decision") body = { id: launch.value, decisionReason: reason.value };
    if (needs === "reason") body = { decisionReason: reason.value };
    try {
      await api("PUT", `/experiments/${encodeURIComponent(id)}/${action}`, { body });
      announce(`${action} done.`);
      experimentPage(params);
    } catch (error) {
      box.replaceChildren(errorBox(error));
    }
  };
  const checks = (x.healthChecks || []).map((c) => el("li", {}, badge(c.status), " ", el("strong", {}, c.name), ": ", c.description));
  mount(
    el("h1", {}, x.name, " ", badge(x.status)),
    el("p", {}, el("a", { href: `#/experiments/${encodeURIComponent(id)}/results` }, "Results"), " · ",
      el("a", { href: `#/experiments/${encodeURIComponent(id)}/edit` }, "Edit")),
    el("div.panel", {}, el("h2", {}, "Lifecycle"),
      el("div.row", {}, field("Group to launch", launch), field("Reason", reason)),
      el("div.row", { role: "group", "aria-label": "Lifecycle actions" },
        ACTIONS.map(([action, label, needs]) => el("button.secondary", { type: "button", onclick: () => act(action, needs) }, label))),
      box),
    el("dl", {},
      el("dt", {}, "Hypothesis"), el("dd", {}, x.hypothesis || "–"),
      el("dt", {}, "Groups"), el("dd", {}, x.groups.map((g) => `${g.name} (${g.id}, ${g.size}%)${g.disabled ? " disabled" : ""}`).join(" · ")),
      el("dt", {}, "Started"), el("dd", {}, when(x.startTime)),
      el("dt", {}, "Quality score"), el("dd", {}, num(x.qualityScore.score, 1))),
    el("h2", {}, "Health checks"), checks.length ? el("ul", {}, checks) : el("p", {}, "No health checks yet."));
}
