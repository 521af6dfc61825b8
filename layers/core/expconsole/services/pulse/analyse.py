"""From per-day unit aggregates to cumulative group statistics per result day, and health checks.

Pass 1 reads the exposure columns of every day from the start: a unit's first valid exposure
(day, time, group) decides everything else. Pass 2 walks the days in order (the 7 days before
the start included, for CUPED) and, per unit, adds a day's events to its post-exposure sums
when the unit was exposed before that day (the `np`/`sp` columns on the exposure day itself)
and to its pre-period sums when the unit's exposure day is 1 to 7 days later. After each day
from the start, the unit values of every metric (STATS.md) over the rollup window, winsorized,
give one `GroupStatistics` record per (metric, group): cumulative, as store.group_stats keeps
them. DuckDB reads the stored day parts (local Parquet) and joins them to the numbered exposed
units (the `exposed` table); distinct-value rows stay in DuckDB tables and are counted there.
Memory: one day's per-unit sums at a time plus a few float arrays per atom over the exposed units.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from expconsole.models.results import GroupStatistics
from expconsole.services.pulse.aggregate import GROUP_SEP
from expconsole.services.pulse.engine import literal
from expconsole.services.pulse.plan import PRE_DAYS, WINSORIZED, EntityPlan, Funnel, MetricPlan
from expconsole.services.results import record_of
from expconsole.stats import CupedRatioStatistic, CupedStatistic
from expconsole.stats.health import srm_check
from expconsole.stats.winsor import winsorize

Parts = dict[str, Path]  # part name (units, distinct, funnel) -> local Parquet file

# Pass 1: every unit's first valid exposure (day, time, group), numbered, and whether it crossed.
EXPOSED_SQL = """
CREATE OR REPLACE TEMP TABLE exposed AS
SELECT CAST(row_number() OVER (ORDER BY unit) - 1 AS BIGINT) AS code, unit, e_day, e_ts, e_group, crossover
FROM (
    SELECT unit, arg_min(day, exp_ts) AS e_day, min(exp_ts) AS e_ts, arg_min(exp_group, exp_ts) AS e_group,
        count(DISTINCT exp_groups) > 1 OR bool_or(contains(exp_groups, {sep})) AS crossover
    FROM ({days}) GROUP BY unit
)
"""
EXPOSURE_DAY = """
SELECT unit, exp_ts, exp_group, exp_groups, {day} AS day FROM read_parquet({file}) WHERE exp_ts IS NOT NULL
"""
EXPOSURE_NONE = """
SELECT NULL::VARCHAR AS unit, NULL::BIGINT AS exp_ts, NULL::VARCHAR AS exp_group,
    NULL::VARCHAR AS exp_groups, NULL::INTEGER AS day WHERE false
"""
EXPOSED_ARRAYS = """
SELECT CAST(e_day AS BIGINT) AS e_day, e_ts, CASE e_group {cases} ELSE -1 END AS e_group
FROM exposed ORDER BY code
"""
DAY_UNITS = "SELECT e.code{columns} FROM read_parquet({file}) u JOIN exposed e ON u.unit = e.unit"
# Distinct-value rows of exposed units, post-exposure and pre-period, kept for the result days.
DISTINCT_TABLES = """
CREATE OR REPLACE TEMP TABLE distinct_post (atom INTEGER, code BIGINT, value VARCHAR, day INTEGER);
CREATE OR REPLACE TEMP TABLE distinct_pre (atom INTEGER, code BIGINT, value VARCHAR, day INTEGER);
"""
DISTINCT_DAY = """
INSERT INTO distinct_{into}
SELECT r.atom, e.code, r.value, {day} FROM read_parquet({file}) r JOIN exposed e ON r.unit = e.unit
WHERE {where}
"""
DISTINCT_POST = "e.e_day < {day} OR (e.e_day = {day} AND r.ts >= e.e_ts)"
DISTINCT_PRE = "e.e_day > {day} AND e.e_day - {pre} <= {day}"
DISTINCT_COUNT = """
SELECT code, count(DISTINCT value) AS n FROM distinct_{table}
WHERE atom = {atom} AND day >= {first_day} GROUP BY code
"""
FUNNEL_DAY = """
SELECT CAST(r.funnel AS BIGINT) AS funnel, CAST(r.step AS BIGINT) AS step, e.code, r.ts
FROM read_parquet({file}) r JOIN exposed e ON r.unit = e.unit
"""


@dataclasses.dataclass
class DayResult:
    ds: str
    records: list[GroupStatistics]
    units: dict[str, int]


@dataclasses.dataclass
class Analysis:
    days: list[DayResult]
    health: dict[str, Any]


def _arrays(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in con.execute(sql).fetchnumpy().items()}


class _Window:
    """Per-unit post-exposure sums over the rollup window: cumulative, or the last R days."""

    def __init__(self, n_atoms: int, n_units: int, rollup: int) -> None:
        self.rollup = rollup
        self.cum = np.zeros((n_atoms, 3, n_units))  # [n, s, days with events]
        self.ring: deque[np.ndarray] = deque(maxlen=max(rollup, 1))

    def day_target(self) -> np.ndarray:
        """Where a day's sums go: the cumulative array itself, or a new day in the ring."""
        if self.rollup == -1:
            return self.cum
        day = np.zeros_like(self.cum)
        self.ring.append(day)
        return day

    def value(self) -> np.ndarray:
        if self.rollup == -1:
            return self.cum
        return np.sum(np.stack(list(self.ring)), axis=0) if self.ring else self.cum


def _day_number(ds: str) -> int:
    return dt.date.fromisoformat(ds).toordinal()


def analyse(
    con: duckdb.DuckDBPyConnection,
    plan: EntityPlan,
    days: list[str],
    parts: list[Parts],
    healths: list[dict[str, int]],
    first_result: int,
    metric_ids: set[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Analysis:
    """Records for each day from `days[first_result]` on; `parts[i]` is day i's aggregate."""
    n_days, n_atoms = len(days), len(plan.atoms)
    analysed = plan.analysed_groups
    group_code = {g: i for i, g in enumerate(analysed)}

    # Pass 1: first exposures.
    selects = [
        EXPOSURE_DAY.format(day=i, file=literal(str(parts[i]["units"]))) for i in range(first_result, n_days)
    ]
    con.execute(
        EXPOSED_SQL.format(sep=literal(GROUP_SEP), days="\nUNION ALL\n".join(selects) or EXPOSURE_NONE)
    )
    cases = " ".join(f"WHEN {literal(g)} THEN {c}" for g, c in group_code.items()) or "WHEN NULL THEN -1"
    exposed_cols = _arrays(con, EXPOSED_ARRAYS.format(cases=cases))
    e_day = exposed_cols["e_day"].astype(np.int64)
    e_ts = exposed_cols["e_ts"].astype(np.int64)
    e_group = exposed_cols["e_group"].astype(np.int64)
    crossover_units = int(con.execute("SELECT count(*) FROM exposed WHERE crossover").fetchone()[0])  # type: ignore[index]
    n_units = len(e_day)

    # Pass 2: walk the days.
    window = _Window(n_atoms, n_units, plan.rollup)
    pre = np.zeros((n_atoms, 3, n_units))
    con.execute(DISTINCT_TABLES)
    trackers = [_FunnelTracker(f, n_units, plan.rollup) for f in plan.funnels]
    results: list[DayResult] = []
    first_seen: dict[str, str] = {}
    last_seen: dict[str, str] = {}
    value_columns = []
    for a, atom in enumerate(plan.atoms):
        value_columns += [f"n{a}", f"np{a}"]
        if atom.measure in ("value", "metadata"):
            value_columns += [f"s{a}", f"sp{a}"]
    for d in range(n_days):
        t = _arrays(
            con,
            DAY_UNITS.format(
                columns="".join(f", u.{c}" for c in value_columns), file=literal(str(parts[d]["units"]))
            ),
        )
        gs = t["code"].astype(np.int64)
        ed = e_day[gs]
        is_full, is_first, is_pre = ed < d, ed == d, (ed > d) & (ed - PRE_DAYS <= d)
        day = window.day_target()
        for a in range(n_atoms):
            n_all = t[f"n{a}"].astype(float)
            n_post = t[f"np{a}"].astype(float)
            has_s = f"s{a}" in t
            s_all = t[f"s{a}"].astype(float) if has_s else n_all
            s_post = t[f"sp{a}"].astype(float) if has_s else n_post
            n_day = np.where(is_full, n_all, np.where(is_first, n_post, 0.0))
            s_day = np.where(is_full, s_all, np.where(is_first, s_post, 0.0))
            day[a, 0, gs] += n_day
            day[a, 1, gs] += s_day
            day[a, 2, gs] += n_day > 0
            pre[a, 0, gs[is_pre]] += n_all[is_pre]
            pre[a, 1, gs[is_pre]] += s_all[is_pre]
            pre[a, 2, gs[is_pre]] += n_all[is_pre] > 0
        for tracker in trackers:
            tracker.settle_pre(e_day == d)
        if any(a.distinct for a in plan.atoms):
            file = literal(str(parts[d]["distinct"]))
            for into, where in (("post", DISTINCT_POST), ("pre", DISTINCT_PRE)):
                con.execute(
                    DISTINCT_DAY.format(into=into, day=d, file=file, where=where.format(day=d, pre=PRE_DAYS))
                )
        if trackers:
            rows = _arrays(con, FUNNEL_DAY.format(file=literal(str(parts[d]["funnel"]))))
            rg = rows["code"].astype(np.int64)
            rts = rows["ts"].astype(np.int64)
            post = (e_day[rg] < d) | ((e_day[rg] == d) & (rts >= e_ts[rg]))
            before = (e_day[rg] > d) & (e_day[rg] - PRE_DAYS <= d)
            fidx, step = rows["funnel"].astype(np.int64), rows["step"].astype(np.int64)
            for index, tracker in enumerate(trackers):
                mine = fidx == index
                p, b = post & mine, before & mine
                tracker.add_day(rg[p], rts[p], step[p], rg[b], rts[b], step[b])
        if d < first_result:
            continue
        ds = days[d]
        if progress:
            progress(ds)
        ctx = _Context(con, plan, d, e_day, window.value(), pre, trackers)
        exposed = e_day <= d
        in_group = {code: exposed & (e_group == code) for code in range(len(analysed))}
        counts = {gid: int(in_group[code].sum()) for gid, code in group_code.items()}
        analysed_mask = exposed & (e_group >= 0)
        records = []
        for metric in plan.metrics:
            if metric.missing or (metric_ids is not None and metric.id not in metric_ids):
                continue
            x, den, px, pden = ctx.metric_values(metric, analysed_mask)
            if np.any(x[analysed_mask] != 0) or (den is not None and np.any(den[analysed_mask] != 0)):
                first_seen.setdefault(metric.id, ds)
                last_seen[metric.id] = ds
            for gid, code in group_code.items():
                mask = in_group[code]
                if not mask.any():
                    continue
                if den is None:
                    stat: Any = CupedStatistic.from_values(x[mask], px[mask])
                else:
                    stat = CupedRatioStatistic.from_values(x[mask], den[mask], px[mask], pden[mask])
                records.append(
                    record_of(
                        stat,
                        kind=plan.kind,
                        entity_id=plan.id,
                        ds=ds,
                        metric_id=metric.id,
                        group_id=gid,
                        directionality=metric.directionality,
                    )
                )
        results.append(DayResult(ds, records, counts))

    computed = [m for m in plan.metrics if metric_ids is None or m.id in metric_ids]
    health = _health(
        plan, results, healths[first_result:], crossover_units, n_units, first_seen, last_seen, computed
    )
    return Analysis(results, health)


class _Context:
    """Unit values of metrics for one result day (post window, pre period, distinct, funnels)."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        plan: EntityPlan,
        d: int,
        e_day: np.ndarray,
        post: np.ndarray,
        pre: np.ndarray,
        trackers: list[_FunnelTracker],
    ) -> None:
        self.con, self.plan, self.d, self.e_day, self.post, self.pre = con, plan, d, e_day, post, pre
        self.n_units = len(e_day)
        first_day = d - plan.rollup + 1 if plan.rollup > 0 else -(10**9)
        self.window_days = np.where(e_day <= d, d - np.maximum(e_day, first_day) + 1, 0).astype(float)
        self._trackers = trackers
        self._first_day = first_day
        self._cache: dict[tuple[str, int, bool], Any] = {}

    def distinct_count(self, atom: int, pre: bool) -> np.ndarray:
        key = ("distinct", atom, pre)
        if key not in self._cache:
            out = np.zeros(self.n_units)
            counted = _arrays(
                self.con,
                DISTINCT_COUNT.format(
                    table="pre" if pre else "post", atom=atom, first_day=-(10**9) if pre else self._first_day
                ),
            )
            out[counted["code"].astype(np.int64)] = counted["n"].astype(float)
            self._cache[key] = out
        return self._cache[key]

    def funnel(self, index: int, pre: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """Users mode: 1 if every step was done in order. Events mode: (completions, starts)."""
        tracker = self._trackers[index]
        return tracker.pre_values() if pre else tracker.values()

    def values(self, metric: MetricPlan, pre: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """Unit values (numerator, denominator or None) of a metric, not winsorized."""
        sums = self.pre if pre else self.post
        t = metric.type
        if t in ("event_count", "event_count_custom"):
            x = np.zeros(self.n_units)
            for a in metric.atoms:
                x += self.distinct_count(a, pre) if self.plan.atoms[a].distinct else sums[a, 0]
            return x, None
        if t == "event_user":
            return (sum((sums[a, 0] for a in metric.atoms), np.zeros(self.n_units)) > 0).astype(float), None
        if t == "event_dau":
            days = np.full(self.n_units, float(PRE_DAYS)) if pre else self.window_days
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(days > 0, sums[metric.atoms[0], 2] / np.maximum(days, 1), 0.0), None
        if t == "sum":
            return sum((sums[a, 1] for a in metric.atoms), np.zeros(self.n_units)), None
        if t == "composite_sum":
            x = np.zeros(self.n_units)
            for c in metric.components:
                cx, cd = self.values(c, pre)
                x += cx if cd is None else np.divide(cx, cd, out=np.zeros_like(cx), where=cd != 0)
            return x, None
        if t == "ratio":
            num, den = metric.components
            nx, nd = self.values(num, pre)
            dx, dd = self.values(den, pre)
            nx = nx if nd is None else np.divide(nx, nd, out=np.zeros_like(nx), where=nd != 0)
            dx = dx if dd is None else np.divide(dx, dd, out=np.zeros_like(dx), where=dd != 0)
            return nx, dx
        if t == "funnel" and metric.funnel is not None:
            return self.funnel(metric.funnel, pre)
        return np.zeros(self.n_units), None

    def metric_values(
        self, metric: MetricPlan, analysed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray]:
        """(x, denominator or None, pre x, pre denominator), winsorized where STATS.md says."""
        x, den = self.values(metric, False)
        px, pden = self.values(metric, True)
        if metric.type == "ratio":
            num, dmetric = metric.components
            x, px = _winsorized(num.type, x, analysed), _winsorized(num.type, px, analysed)
            den = _winsorized(dmetric.type, den, analysed)
            pden = _winsorized(dmetric.type, pden, analysed)
        else:
            x, px = _winsorized(metric.type, x, analysed), _winsorized(metric.type, px, analysed)
        if den is not None:
            return x, den, px, pden if pden is not None else np.zeros_like(px)
        return x, None, px, np.zeros_like(px)


INT64_MIN = np.iinfo(np.int64).min
INT64_MAX = np.iinfo(np.int64).max


class _FunnelState:
    """A funnel's progress per unit, advanced by step events in time order.

    Users mode (greedy, which is optimal for "every step in order"): `done` steps reached and the
    time of the last one; a step counts at or after the previous step's time (strictly after when
    it is the same atom: one event is one step). Events mode: a first-step event starts an attempt
    (restarting one in progress), the next step's event advances it, the last step completes it.
    """

    def __init__(self, funnel: Funnel, n_units: int) -> None:
        self.funnel, self.k = funnel, len(funnel.steps)
        self.same = [s > 0 and funnel.steps[s] == funnel.steps[s - 1] for s in range(self.k)]
        self.n_units = n_units
        if funnel.mode == "users":
            self.done = np.zeros(n_units, dtype=np.int64)
            self.t_last = np.full(n_units, INT64_MIN, dtype=np.int64)
        else:
            self.starts = np.zeros(n_units)
            self.completions = np.zeros(n_units)
            self.progress: dict[int, tuple[int, int]] = {}  # unit -> (next step, time of the last step)

    def advance(self, g: np.ndarray, ts: np.ndarray, step: np.ndarray) -> None:
        if not g.size:
            return
        if self.funnel.mode == "users":
            for s in range(self.k):
                m = step == s
                gm, tm = g[m], ts[m]
                if not gm.size:
                    continue
                ok = (self.done[gm] == s) & (
                    (tm > self.t_last[gm]) if self.same[s] else (tm >= self.t_last[gm])
                )
                gm, tm = gm[ok], tm[ok]
                if not gm.size:
                    continue
                order = np.lexsort((tm, gm))
                gm, tm = gm[order], tm[order]
                first = np.ones(gm.size, dtype=bool)
                first[1:] = gm[1:] != gm[:-1]
                self.done[gm[first]] = s + 1
                self.t_last[gm[first]] = tm[first]
            return
        order = np.lexsort((step, ts, g))
        steps, k, progress = self.funnel.steps, self.k, self.progress
        starts: list[int] = []
        completions: list[int] = []
        for unit, t, s in zip(g[order].tolist(), ts[order].tolist(), step[order].tolist(), strict=True):
            at, last_t = progress.get(unit, (0, 0))
            if at > 0 and s == at and not (steps[s] == steps[s - 1] and t == last_t):
                at += 1
                if at == k:
                    completions.append(unit)
                    at = 0
                progress[unit] = (at, t)
            elif s == 0:
                starts.append(unit)
                progress[unit] = (1, t)
                if k == 1:
                    completions.append(unit)
                    progress[unit] = (0, t)
        np.add.at(self.starts, np.asarray(starts, dtype=np.int64), 1.0)
        np.add.at(self.completions, np.asarray(completions, dtype=np.int64), 1.0)

    def values(self) -> tuple[np.ndarray, np.ndarray | None]:
        if self.funnel.mode == "users":
            return (self.done == self.k).astype(float), None
        return self.completions.copy(), self.starts.copy()


class _FunnelTracker:
    """A funnel's post-exposure values over the rollup window and pre-period values, kept day by day.

    Cumulative windows carry one state forward (each day's rows are read once); 1- and 7-day
    windows replay their last days. Pre-period rows are kept only until the unit's exposure day,
    when its pre value is computed and the rows dropped: memory stays bounded by units and a
    week of step events, not by the whole experiment's.
    """

    def __init__(self, funnel: Funnel, n_units: int, rollup: int) -> None:
        self.funnel, self.n_units, self.rollup = funnel, n_units, rollup
        self.state = _FunnelState(funnel, n_units)
        self.window: deque[tuple[np.ndarray, np.ndarray, np.ndarray]] = deque(maxlen=max(rollup, 1))
        self.pre_rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.pre_x = np.zeros(n_units)
        self.pre_d = np.zeros(n_units)

    def add_day(
        self,
        g: np.ndarray,
        ts: np.ndarray,
        step: np.ndarray,
        pg: np.ndarray,
        pts: np.ndarray,
        pstep: np.ndarray,
    ) -> None:
        if self.rollup == -1:
            self.state.advance(g, ts, step)
        else:
            self.window.append((g, ts, step))
        if pg.size:
            self.pre_rows.append((pg, pts, pstep))

    def settle_pre(self, exposed_today: np.ndarray) -> None:
        """Pre values of the units exposed today (their 7 pre days are all read); their rows go."""
        if not self.pre_rows:
            return
        g, ts, step = (np.concatenate(parts) for parts in zip(*self.pre_rows, strict=True))
        mine = exposed_today[g]
        if mine.any():
            state = _FunnelState(self.funnel, self.n_units)
            state.advance(g[mine], ts[mine], step[mine])
            x, d = state.values()
            units = np.unique(g[mine])
            self.pre_x[units] = x[units]
            if d is not None:
                self.pre_d[units] = d[units]
        keep = ~mine
        self.pre_rows = [(g[keep], ts[keep], step[keep])] if keep.any() else []

    def values(self) -> tuple[np.ndarray, np.ndarray | None]:
        if self.rollup == -1:
            return self.state.values()
        state = _FunnelState(self.funnel, self.n_units)
        for g, ts, step in self.window:
            state.advance(g, ts, step)
        return state.values()

    def pre_values(self) -> tuple[np.ndarray, np.ndarray | None]:
        return self.pre_x, (self.pre_d if self.funnel.mode == "events" else None)


def _winsorized(metric_type: str, values: np.ndarray | None, analysed: np.ndarray) -> np.ndarray | None:
    """Cap at the 99.9th percentile of the non-zero values of the analysed units (STATS.md)."""
    if values is None or metric_type not in WINSORIZED:
        return values
    _, threshold = winsorize(values[analysed])
    return values if threshold is None else np.minimum(values, threshold)


def _health(
    plan: EntityPlan,
    results: list[DayResult],
    healths: list[dict[str, int]],
    crossover_units: int,
    exposed_units: int,
    first_seen: dict[str, str],
    last_seen: dict[str, str],
    computed: list[MetricPlan],
) -> dict[str, Any]:
    """The health checks of the latest day: exposures, SRM, crossover, invalid exposures, metrics.

    Only the `computed` metrics (all but those a `metric` refresh leaves alone) are judged."""
    counts: dict[str, int] = {}
    for day_counts in healths:
        for key, value in day_counts.items():
            counts[key] = counts.get(key, 0) + int(value)
    latest = results[-1] if results else None
    units = latest.units if latest else {}
    groups = [g for g in plan.groups if not g.get("disabled")]
    observed = [units.get(g["id"], 0) for g in groups]
    sizes = [float(g.get("size") or 0) for g in groups]
    srm: dict[str, Any] = {"status": "pass", "p_value": None}
    if sum(observed) > 0 and sum(sizes) > 0 and len(groups) > 1:
        check = srm_check(observed, sizes)
        srm = {"status": check.status, "p_value": check.p_value}
    missing = [m.id for m in computed if m.missing or m.id not in first_seen]
    return {
        "ds": latest.ds if latest else None,
        "units": units,
        "exposedUnits": exposed_units,
        "crossoverUnits": crossover_units,
        "srm": srm,
        "exposures": counts,
        "missingMetrics": missing,
        "metricDates": {m.id: (first_seen.get(m.id), last_seen.get(m.id)) for m in computed},
        "groups": [{"id": g["id"], "name": g["name"], "size": g.get("size")} for g in groups],
    }
