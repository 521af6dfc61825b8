// Holdouts: the list, and a holdout's topline impact (holdout pulse_results) as on the results page.
import { api } from "./api.js";
import { go } from "./main.js";
import { el, mount, pager, badge, num, pct, pvalue, field, svg } from "./ui.js";
import { significance } from "./results.js";

export async function holdoutsPage(_params, query) {
  const page = query.get("page") || "1";
  const list = await api("GET", "/holdouts", { query: { page, limit: 20 } });
  mount(el("h1", {}, "Holdouts"),
    list.data.length ? el("div.table-wrap", {}, el("table", { id: "holdouts" }, el("caption.sr-only", {}, "Holdouts"),
      el("thead", {}, el("tr", {}, ["Name", "Held out", "Enabled", "Experiments"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, list.data.map((h) => el("tr", {},
        el("td", {}, el("a", { href: `#/holdouts/${encodeURIComponent(h.id)}` }, h.name)),
        el("td.num", {}, `${num(h.passPercentage, 2)}%`), el("td", {}, h.isEnabled ? "yes" : "no"),
        el("td", {}, (h.experimentIDs || []).join(", "))))))) : el("p", {}, "No holdouts."),
    pager(list.pagination, (p) => go("holdouts", { page: p })));
}

export async function holdoutPage(params, query) {
  const enc = encodeURIComponent(params[0]);
  const cuped = query.get("cuped") || "true";
  const confidence = query.get("confidence") || "95";
  const [holdout, results] = await Promise.all([
    api("GET", `/holdouts/${enc}`), api("GET", `/holdouts/${enc}/pulse_results`, { query: { cuped, confidence } }),
  ]);
  const h = holdout.data, data = results.data;
  const nav = (changes) => go(`holdouts/${enc}`, { cuped, confidence, ...changes });
  const entries = data.monitoringMetrics;
  const scale = Math.max(1e-9, ...entries.flatMap((e) => [e.percentConfidenceInterval.lower, e.percentConfidenceInterval.upper]).filter((v) => v !== null).map(Math.abs)) * 1.1;
  const bar = (iv, tone) => {
    const s = svg("svg", { width: 220, height: 22, role: "img" });
    s.append(svg("line", { x1: 110, x2: 110, y1: 0, y2: 22, stroke: "#1b1f24" }));
    if (iv.lower !== null && iv.upper !== null) {
      const x = (v) => 110 + (v / scale) * 104;
      s.append(svg("rect", { x: x(iv.lower), y: 6, width: Math.max(2, x(iv.upper) - x(iv.lower)), height: 10, class: `ci-${tone}` }));
    }
    return s;
  };
  mount(el("h1", {}, `Holdout: ${h.name}`), el("p", {}, h.description || "", " ", badge(h.isEnabled ? "enabled" : "disabled")),
    el("form.panel.row", { "aria-label": "Result options", onsubmit: (e) => e.preventDefault() },
      el("label.inline", {}, el("input", { type: "checkbox", name: "cuped", checked: cuped === "true", onchange: (e) => nav({ cuped: String(e.target.checked) }) }), "CUPED"),
      field("Confidence", el("select", { name: "confidence", onchange: (e) => nav({ confidence: e.target.value }) },
        ["80", "90", "95", "98", "99"].map((c) => el("option", { value: c, selected: c === confidence }, `${c}%`))))),
    entries.length === 0 ? el("p.note", {}, results.message) : el("div.table-wrap", {}, el("table", { id: "holdout-results" },
      el("caption", {}, `Topline impact on ${data.ds}: exposed units against the held-out ones`),
      el("thead", {}, el("tr", {}, ["Metric", "Change", "Interval vs 0", "p-value", "Topline impact"].map((t) => el("th", { scope: "col" }, t)))),
      el("tbody", {}, entries.map((e) => {
        const [side, tone] = significance(e.percentConfidenceInterval, e.directionality);
        return el("tr.metric", { dataset: { metric: e.metricID, significance: side } },
          el("th", { scope: "row" }, e.metricName), el("td.num", {}, pct(e.percentChange)),
          el("td", {}, bar(e.percentConfidenceInterval, tone), el("div.muted", {}, `[${pct(e.percentConfidenceInterval.lower)}, ${pct(e.percentConfidenceInterval.upper)}]`)),
          el("td.num", {}, pvalue(e.pValue)),
          el("td.num", {}, num(e.absoluteToplineImpact), el("div.muted", {}, e.relativeToplineImpact === undefined ? "" : pct(e.relativeToplineImpact))));
      })))));
}
