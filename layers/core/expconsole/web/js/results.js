// An experiment's results: the pulse scorecard (pulse_results), the effect over time
// (pulse_results/days), the health checks and load_pulse. Every figure shown is a field of an API
// answer; the page only chooses the query parameters and draws.
import { api } from "./api.js";
import { go } from "./main.js";
import { el, mount, errorBox, badge, num, pct, pvalue, when, svg, announce, field } from "./ui.js";
import { lineChart } from "./chart.js";

const CONFIDENCES = ["80", "90", "95", "98", "99"];
const CORRECTIONS = [
  ["applyBonferroniPerVariant", "bonferroniCorrection", "Bonferroni across variants"],
  ["applyBonferroniPerMetric", "bonferroniCorrectionPerMetric", "Bonferroni across metrics"],
  ["applyBenjaminiHochbergPerMetric", "benjaminiHochbergPerMetric", "Benjamini–Hochberg across metrics"],
  ["applyBenjaminiHochbergPerVariant", "benjaminiHochbergPerVariant", "Benjamini–Hochberg across variants"],
];

/** Where an interval lies against zero, and whether that is good for the metric's direction. */
export function significance(interval, directionality) {
  const { lower, upper } = interval || {};
  if (lower === null || upper === null || lower === undefined || upper === undefined) return ["none", "none"];
  const side = lower > 0 ? "positive" : upper < 0 ? "negative" : "none";
  if (side === "none") return [side, "none"];
  const good = (side === "positive") === (directionality !== "decrease");
  return [side, good ? "good" : "bad"];
}

function ciBar(interval, scale, tone) {
  const width = 220, height = 22, mid = width / 2;
  const x = (v) => mid + (v / scale) * (mid - 6);
  const s = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img" });
  s.append(svg("line", { x1: mid, x2: mid, y1: 0, y2: height, stroke: "#1b1f24", "stroke-width": 1 }));
  if (interval.lower !== null && interval.upper !== null) {
    const a = x(interval.lower), b = x(interval.upper);
    s.append(svg("rect", { x: Math.min(a, b), y: 6, width: Math.max(2, Math.abs(b - a)), height: 10, rx: 2, class: `ci-${tone}` }));
  }
  return s;
}

function toneWords(side, tone) {
  if (side === "none") return "Not significant";
  return `Significant ${side === "positive" ? "increase" : "decrease"} (${tone === "good" ? "good" : "bad"})`;
}

export async function resultsPage(params, query) {
  const id = params[0];
  const enc = encodeURIComponent(id);
  const x = (await api("GET", `/experiments/${enc}`)).data;
  const control = x.controlGroupID || x.groups[0].id;
  const tests = x.groups.filter((g) => g.id !== control);
  const state = {
    test: query.get("test") || (tests[0] && tests[0].id),
    cuped: query.get("cuped") || "true",
    sequential: query.get("sequential") === "true",
    confidence: query.get("confidence") || x.defaultConfidenceInterval,
  };
  for (const [param, setting] of CORRECTIONS) state[param] = query.get(param) || String(!!x[setting]);
  const apiQuery = { control, test: state.test, cuped: state.cuped, confidence: state.confidence };
  for (const [param] of CORRECTIONS) apiQuery[param] = state[param];
  const navigate = (changes) => go(`experiments/${enc}/results`, { ...state, sequential: String(state.sequential), ...changes });

  const testSelect = el("select", { name: "test", onchange: (e) => navigate({ test: e.target.value }) },
    tests.map((g) => el("option", { value: g.id, selected: g.id === state.test }, g.name)));
  const confidence = el("select", { name: "confidence", onchange: (e) => navigate({ confidence: e.target.value }) },
    CONFIDENCES.map((c) => el("option", { value: c, selected: Number(c) === Number(state.confidence) }, `${c}%`)));
  const toggle = (name, label, checked, onchange) => el("label.inline", {},
    el("input", { type: "checkbox", name, checked, onchange }), label);
  const controls = el("form.panel", { "aria-label": "Result options", onsubmit: (e) => e.preventDefault() },
    el("div.row", {}, field("Test group", testSelect), field("Confidence", confidence)),
    el("div.row", { role: "group", "aria-label": "Switches" },
      toggle("cuped", "CUPED", state.cuped === "true", (e) => navigate({ cuped: String(e.target.checked) })),
      toggle("sequential", "Sequential intervals", state.sequential, (e) => navigate({ sequential: String(e.target.checked) })),
      CORRECTIONS.map(([param, , label]) => toggle(param, label, state[param] === "true", (e) => navigate({ [param]: String(e.target.checked) })))));

  const [results, series, history] = await Promise.all([
    api("GET", `/experiments/${enc}/pulse_results`, { query: apiQuery }),
    api("GET", `/experiments/${enc}/pulse_results/days`, { query: apiQuery }),
    api("GET", `/experiments/${enc}/pulse_load_history`, { query: { limit: 10 } }),
  ]);
  const data = results.data;
  const intervalOf = (e) => (state.sequential ? e.percent_sequential_testing_confidence_interval : e.percent_confidence_interval);
  const entries = [["Primary", data.primaryMetrics], ["Secondary", data.secondaryMetrics], ["Other", data.otherMetrics]];
  const all = entries.flatMap(([, list]) => list);
  const bounds = all.flatMap((e) => [intervalOf(e).lower, intervalOf(e).upper, e.percent_change]).filter((v) => v !== null);
  const scale = Math.max(1e-9, ...bounds.map(Math.abs)) * 1.1;
  const testName = (tests.find((g) => g.id === state.test) || {}).name;
  const controlName = (x.groups.find((g) => g.id === control) || {}).name;

  const body = [];
  for (const [label, list] of entries) {
    if (!list.length) continue;
    body.push(el("tr", {}, el("th", { colspan: 6, scope: "rowgroup" }, `${label} metrics`)));
    for (const e of list) {
      const interval = intervalOf(e);
      const [side, tone] = significance(interval, e.directionality);
      const p = state.sequential ? e.sequentialTestingPValue : e.p_value;
      body.push(el("tr.metric", { dataset: { metric: e.metricID, significance: side, tone, lower: String(interval.lower), upper: String(interval.upper), pvalue: String(p) } },
        el("th", { scope: "row" }, e.metricName, el("div.muted", {}, `${e.metricID.split("::")[1]} · ${e.directionality === "decrease" ? "lower is better" : "higher is better"}`)),
        el("td.num", { class: `num ${tone === "none" ? "" : "sig-" + tone}` }, pct(e.percent_change)),
        el("td.ci", { "aria-label": `${toneWords(side, tone)}: ${pct(interval.lower)} to ${pct(interval.upper)}` },
          ciBar(interval, scale, tone), el("div.muted", {}, `[${pct(interval.lower)}, ${pct(interval.upper)}] · ${toneWords(side, tone)}`)),
        el("td.num", {}, pvalue(p), el("div.muted", {}, `α ${num(e.adjustedAlpha, 4)}`)),
        el("td.num.hide-narrow", {}, num(e.test_mean), el("div.muted", {}, `${num(e.test_units, 0)} units`)),
        el("td.num.hide-narrow", {}, num(e.control_mean), el("div.muted", {}, `${num(e.control_units, 0)} units`))));
    }
  }
  // `ds` is always a day (today while nothing is computed): no entries is what says "no results".
  const scorecard = all.length === 0
    ? el("p.note", { id: "no-results" }, results.message)
    : el("div.table-wrap", {}, el("table", { id: "scorecard", dataset: { query: new URLSearchParams(apiQuery).toString(), ds: data.ds } },
      el("caption", {}, `${testName} vs ${controlName}, ${data.ds}: percent change with its ${state.confidence}% ${state.sequential ? "sequential " : ""}interval (bar: the interval against zero)`),
      el("thead", {}, el("tr", {}, el("th", { scope: "col" }, "Metric"), el("th.num", { scope: "col" }, "Change"),
        el("th", { scope: "col" }, "Interval vs 0"), el("th.num", { scope: "col" }, "p-value"),
        el("th.num.hide-narrow", { scope: "col" }, `${testName} mean`), el("th.num.hide-narrow", { scope: "col" }, `${controlName} mean`))),
      el("tbody", {}, body)));

  const charts = el("div", { id: "timeseries" });
  const checks = (x.healthChecks || []).map((c) => healthItem(c));
  const loadBox = el("div", { id: "load" });
  mount(
    el("h1", {}, `Results: ${x.name}`),
    el("p", {}, el("a", { href: `#/experiments/${enc}` }, "Experiment"), " · ", badge(x.status)),
    controls, scorecard,
    el("h2", {}, "Effect over time"), el("p.muted", {}, "Cumulative percent change with its interval, one point per result day."), charts,
    el("h2", {}, "Health checks"), checks.length ? el("ul", { id: "health" }, checks) : el("p", {}, "No health checks yet: load pulse first."),
    el("h2", {}, "Pulse loads"), loadBox);
  for (const metric of series.data.metrics) {
    const box = el("figure.chart", { dataset: { metric: metric.metricID } }, el("figcaption", {}, metric.metricName));
    charts.append(box);
    lineChart(box, metric.points.map((p) => ({ ds: p.ds, y: p.percent_change, lower: intervalOf(p).lower, upper: intervalOf(p).upper })), "% change");
    const empty = metric.points.filter((p) => p.percent_change === null).map((p) => p.ds);
    if (empty.length) box.append(el("p.muted", {}, `No figure (too few units) on ${empty.join(", ")}.`));
    box.append(pointsTable(metric, intervalOf));
  }
  if (!series.data.metrics.length) charts.append(el("p", {}, series.message));
  renderLoads(loadBox, enc, history.data, () => resultsPage(params, query));
}

function pointsTable(metric, intervalOf) {
  return el("table.sr-only.points", {}, el("caption", {}, `${metric.metricName} by day`),
    el("thead", {}, el("tr", {}, el("th", {}, "Day"), el("th", {}, "Change"), el("th", {}, "Interval"))),
    el("tbody", {}, metric.points.map((p) => el("tr", {}, el("td", {}, p.ds), el("td", {}, pct(p.percent_change)),
      el("td", {}, `${pct(intervalOf(p).lower)} to ${pct(intervalOf(p).upper)}`)))));
}

function healthItem(check) {
  const m = check.metadata || {};
  let detail = null;
  if (check.type === "srm") {
    detail = el("div", {}, `p-value ${pvalue(m.p_value)} · `, (m.groups || []).map((g) => `${g.groupName}: ${num(g.units, 0)} units (${num(g.observedPercent, 1)}% vs ${num(g.expectedPercent, 1)}%)`).join(" · "));
  } else if (check.type === "exposure_balance") {
    detail = el("div", {}, `valid exposures ${num(m.validExposures, 0)} · crossover ${num(m.crossoverPercent, 2)}% · unknown group ${num(m.unknownGroupExposures, 0)} · disabled group ${num(m.disabledGroupExposures, 0)} · after decision ${num(m.exposuresAfterDecision, 0)}`);
  } else if (check.type === "metrics") {
    detail = el("div", {}, (m.missingMetrics || []).length ? `Missing: ${m.missingMetrics.join(", ")}` : "No metric missing.");
  }
  return el("li", { dataset: { check: check.type || check.name } }, badge(check.status), " ", el("strong", {}, check.name), ": ", check.description, detail);
}

function renderLoads(box, enc, records, reload) {
  const progress = el("progress.progress", { hidden: true, "aria-label": "Pulse load in progress" });
  const message = el("div", { role: "status" });
  const button = el("button", { type: "button", onclick: async () => {
    button.disabled = true; progress.hidden = false; message.textContent = "Loading pulse…";
    try {
      const answer = await api("POST", `/experiments/${enc}/load_pulse`, { body: {} });
      message.textContent = answer.message;
      for (let i = 0; i < 200; i++) { // queued in AWS: follow the history until the newest load finishes
        const newest = (await api("GET", `/experiments/${enc}/pulse_load_history`, { query: { limit: 1 } })).data[0];
        if (newest && newest.finishedTime) break;
        await new Promise((r) => setTimeout(r, 3000));
      }
      announce("Pulse loaded.");
      await reload();
    } catch (error) {
      box.append(errorBox(error));
    } finally {
      button.disabled = false; progress.hidden = true;
    }
  } }, "Load pulse");
  const rows = records.map((r) => el("tr", {}, el("td", {}, when(r.createdTime)), el("td", {}, when(r.finishedTime)),
    el("td", {}, badge(r.finishedState || "running", r.finishedState === "success" ? "good" : r.finishedState === "failure" ? "bad" : "")),
    el("td", {}, r.reloadType), el("td.hide-narrow", {}, `${r.startDs || "–"} → ${r.endDs || "–"}`), el("td.hide-narrow", {}, r.creatorName || "")));
  box.replaceChildren(el("div.row", {}, button, progress), message,
    rows.length ? el("div.table-wrap", {}, el("table", { id: "load-history" }, el("caption.sr-only", {}, "Pulse load history, newest first"),
      el("thead", {}, el("tr", {}, ["Started", "Finished", "State", "Refresh", "Days", "By"].map((h, i) => el("th", { scope: "col", class: i > 3 ? "hide-narrow" : null }, h)))),
      el("tbody", {}, rows))) : el("p", {}, "No pulse load yet."));
}
