// The events catalogue: names seen lately, each event's daily counts (a chart) and the metrics built on it.
import { api } from "./api.js";
import { go } from "./main.js";
import { el, mount, field, num, when } from "./ui.js";
import { lineChart } from "./chart.js";

export async function eventsPage(params, query) {
  const days = query.get("days") || "7";
  const recent = await api("GET", "/events", { query: { days, limit: 1000 } });
  const names = [...new Set(recent.data.map((e) => e.name))].sort();
  const selected = params[0] || names[0];
  const daysSelect = el("select", { name: "days", onchange: (e) => go(selected ? `events/${encodeURIComponent(selected)}` : "events", { days: e.target.value }) },
    ["1", "7", "14", "31"].map((d) => el("option", { value: d, selected: d === days }, `last ${d} days`)));
  const list = el("ul", { id: "event-names" }, names.map((n) => el("li", {},
    el("a", { href: `#/events/${encodeURIComponent(n)}?days=${days}`, "aria-current": n === selected ? "true" : null }, n))));
  const detail = el("section", { id: "event-detail", "aria-live": "polite" });
  mount(el("h1", {}, "Events"), el("div.row", {}, field("Events seen in the", daysSelect)),
    el("div.row", { style: null }, el("nav.panel", { "aria-label": "Event names" }, names.length ? list : el("p", {}, "No events in this period.")), detail));
  if (!selected) return;
  const enc = encodeURIComponent(selected);
  const [summary, metrics] = await Promise.all([api("GET", `/events/${enc}/summary`), api("GET", `/events/${enc}/metrics`, { query: { limit: 100 } })]);
  const s = summary.data;
  const chart = el("figure.chart", { id: "event-chart" }, el("figcaption", {}, `${s.name}: events per UTC day`));
  detail.append(el("h2", {}, s.name),
    el("p", {}, `${num(s.totalCount, 0)} events · first seen ${when(s.firstSeen)} · last seen ${when(s.lastSeen)}`),
    chart,
    el("table.sr-only", {}, el("caption", {}, "Events per day"), el("tbody", {}, s.days.map((d) => el("tr", {}, el("td", {}, d.date), el("td", {}, String(d.count)))))),
    el("h3", {}, "Metadata keys"), el("p", {}, s.metadataKeys.join(", ") || "none"),
    el("h3", {}, "Metrics on this event"),
    el("ul", { id: "event-metrics" }, metrics.data.map((m) => el("li", {}, el("code", {}, `${m.name}::${m.type}`), m.description ? ` – ${m.description}` : ""))));
  lineChart(chart, [...s.days].reverse().map((d) => ({ ds: d.date, y: d.count })), "events");
}
