// Line charts with an interval band (uPlot, vendored under /ui/vendor). Points come from the API.

/** Draws [{ds, y, lower, upper}] into `box`; sets box.dataset.points to the points uPlot drew. */
export function lineChart(box, points, label) {
  const xs = points.map((p) => Date.parse(p.ds + "T00:00:00Z") / 1000);
  const data = [xs, points.map((p) => p.y)];
  const series = [{}, { label, stroke: "#0b57d0", width: 2, points: { show: true, size: 7 } }];
  const bands = [];
  if (points.some((p) => p.lower !== undefined)) {
    data.push(points.map((p) => p.upper), points.map((p) => p.lower));
    series.push({ label: "upper", stroke: "rgba(11,87,208,0.35)", points: { show: false } },
      { label: "lower", stroke: "rgba(11,87,208,0.35)", points: { show: false } });
    bands.push({ series: [2, 3], fill: "rgba(11,87,208,0.15)" });
  }
  const width = Math.max(260, Math.min(box.clientWidth || 600, 1200));
  const plot = new window.uPlot({
    width, height: 200, series, bands, padding: [12, 48, 0, 0],
    scales: { x: { time: true } },
    // one tick a day at most, labelled by its UTC date: the points are result days
    axes: [{ space: 90, incrs: [86400, 2 * 86400, 7 * 86400, 30 * 86400],
      values: (_u, ticks) => ticks.map((t) => new Date(t * 1000).toISOString().slice(0, 10)) }, { label, size: 60 }],
    legend: { show: true },
  }, data, box);
  box.dataset.points = String(plot.data[0].length);
  box.setAttribute("role", "group");
  return plot;
}
