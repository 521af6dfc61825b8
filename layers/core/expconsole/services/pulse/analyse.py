# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters)
"""From per-day unit aggregates to cumulative group statistics per result day, in SQL; health checks.

DuckDB runs the whole combination over the stored day parts (local Parquet: `units`, `distinct`,
`funnel`, see aggregate.py); Python only shapes its result rows into `GroupStatistics` records
and the health document. The statements, in order (the templates below):

1. `exposed`: every unit's first valid exposure (day, time, group), numbered, and whether it
   crossed groups. A unit's exposure day decides which of its events count: on later days all
   of them, on the exposure day those at or after the exposure (the `np`/`sp` columns), and on
   the 7 days before it the CUPED pre-period.
2. `unit_days`: per exposed unit and day (pre-period and post-exposure), each atom's count and
   sum; `distinct_rows` and `funnel_rows` likewise keep distinct values and funnel steps.
3. `post`: one row per (analysed unit, result day r ≥ its exposure day), each atom's sums over
   the rollup window (cumulative, or the last 1 or 7 days: a window function over the days),
   distinct counts and funnel progress over the same window. Cumulative windows add per-day
   contributions (the values first seen that day, the funnel attempts completed that day), so
   the events are read once whatever the number of result days; 1- and 7-day windows count
   their days' rows again for each result day.
4. `pre_*`: per unit, the same over its pre-period.
5. `unit_values`: each metric's unit values (docs/statistics.md, 'Unit values per metric type') from
   those columns; `thresholds`: per result day, the winsorization threshold of each capped column
   (the exact linear 99.9th percentile of the non-zero values, `quantile_cont`, as numpy's default
   percentile).
6. The statistics, per (result day, group): n, the mean of each column and the centred
   co-moments `C_ij = Σ(a_i − ā_i)(a_j − ā_j)` as `var_pop·n` / `covar_pop·n` (DuckDB's
   streaming Welford updates, never raw power sums), the units with pre-period data, and
   whether the metric had any non-zero value (the health check's metric dates).

Floating-point sums depend on the order of their terms, and DuckDB's threads combine partial
aggregates in any order. So that a reload of the same events writes the same records to the
last bit (a load's records are compared with a retry's): the pre-period sums of values are
ordered aggregates (`ORDER BY day`, at most 7 terms per unit); for the statistics, the capped
unit values of each result day are written sorted by (group, unit) into `unit_stats` (a parallel
sort) and aggregated by one thread, which reads that table in its order. One sort shared by
every statistic costs a fraction of an `ORDER BY` per aggregate (DuckDB sorts each ordered
aggregate's input apart; the measurements: docs/performance.md, 'Pulse pipeline').
Window sums run in (unit, day) order already; counts are exact.

Funnels (`funnelCountDistinct`): users mode counts a unit once it did every step in order, each
step at or after the previous one's time (strictly after when it is the same atom: one event is
one step), taking the earliest such event at each step. Events mode counts attempts: a
first-step event starts one (abandoning one in progress), the next step's first event after the
last step's advances it, the last step completes it; the value is completions over starts.

This SQL runs on DuckDB only (the Athena engine computes the day parts; the combination reads
them locally), so it may use DuckDB's functions (`quantile_cont`, ASOF joins).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from expconsole.models.results import GroupStatistics
from expconsole.services.pulse.aggregate import GROUP_SEP
from expconsole.services.pulse.engine import literal
from expconsole.services.pulse.plan import PRE_DAYS, WINSORIZED, EntityPlan, Funnel, MetricPlan
from expconsole.srm import srm_check

Parts = dict[str, Path]  # part name (units, distinct, funnel) -> local Parquet file
# docs/statistics.md, 'Winsorization': capped at the 99.9th percentile of the non-zero values
WINSOR_QUANTILE = 0.999

# 1. Every unit's first valid exposure (day, time, group code), numbered, and whether it crossed.
EXPOSED_SQL = """
SELECT CAST(row_number() OVER (ORDER BY unit) - 1 AS BIGINT) AS code, unit, e_day, e_ts,
    CASE e_group {cases} ELSE -1 END AS g, crossover
FROM (
    SELECT unit, arg_min(day, exp_ts) AS e_day, min(exp_ts) AS e_ts, arg_min(exp_group, exp_ts) AS e_group,
        count(DISTINCT exp_groups) > 1 OR bool_or(contains(exp_groups, {sep})) AS crossover
    FROM ({days}) AS x GROUP BY unit
) AS f
"""
EXPOSURE_DAY = """
SELECT unit, exp_ts, exp_group, exp_groups, {day} AS day FROM read_parquet({file}) WHERE exp_ts IS NOT NULL
"""
EXPOSURE_NONE = """
SELECT NULL::VARCHAR AS unit, NULL::BIGINT AS exp_ts, NULL::VARCHAR AS exp_group,
    NULL::VARCHAR AS exp_groups, NULL::INTEGER AS day WHERE false
"""
EXPOSED_COUNTS = "SELECT count(*), count(*) FILTER (WHERE crossover) FROM exposed"
UNITS_PER_DAY = "SELECT e_day, g, count(*) FROM exposed WHERE g >= 0 GROUP BY e_day, g"

# 2. Per exposed unit and day from 7 days before its exposure day: each atom's count n<a> (and
# sum s<a> of value and metadata atoms) over the events that count: the whole day before and
# after the exposure day, the events at or after the exposure on that day.
UNIT_DAY = """
SELECT e.code, {day} AS day, {day} >= e.e_day AS post{columns}
FROM read_parquet({file}) AS u JOIN exposed AS e ON u.unit = e.unit
WHERE {day} >= e.e_day - {pre}
"""
UNIT_DAY_COLUMN = ", CASE WHEN e.e_day = {day} THEN u.{m}p{a} ELSE u.{m}{a} END AS {m}{a}"
POST_ROW = "({day} > e.e_day OR ({day} = e.e_day AND r.ts >= e.e_ts))"
PRE_ROW = "({day} < e.e_day AND {day} >= e.e_day - {pre})"
DISTINCT_DAY = """
SELECT r.atom, e.code, r.value, {day} AS day, {post} AS post
FROM read_parquet({file}) AS r JOIN exposed AS e ON r.unit = e.unit
WHERE r.value IS NOT NULL AND ({post} OR {pre})
"""
FUNNEL_DAY = """
SELECT r.funnel, r.step, e.code, r.ts, {day} AS day, {post} AS post
FROM read_parquet({file}) AS r JOIN exposed AS e ON r.unit = e.unit
WHERE {post} OR {pre}
"""
TABLE = "CREATE OR REPLACE TEMP TABLE {name} AS {select}"
VIEW = "CREATE OR REPLACE TEMP VIEW {name} AS {select}"

# 3. Distinct values over the window: cumulative windows count each value on the day it is first
# seen (a running sum then counts distinct values); 1- and 7-day windows count each result day.
DISTINCT_NEW = """
SELECT code, day{counts} FROM (
    SELECT atom, code, value, min(day) AS day FROM distinct_rows WHERE post GROUP BY atom, code, value
) AS x GROUP BY code, day
"""
DISTINCT_NEW_COUNT = ", count(*) FILTER (WHERE atom = {a}) AS d{a}"
DISTINCT_WINDOW = """
SELECT x.code, CAST(w.range AS INTEGER) AS r{counts}
FROM distinct_rows AS x JOIN range({first}, {end}) AS w ON w.range BETWEEN x.day AND x.day + {span}
WHERE x.post GROUP BY x.code, w.range
"""
DISTINCT_PRE = "SELECT code{counts} FROM distinct_rows AS x WHERE NOT x.post GROUP BY code"
DISTINCT_COUNT = ", count(DISTINCT x.value) FILTER (WHERE x.atom = {a}) AS d{a}"
# A funnel's rows in one scope: post-exposure (per unit, cumulative), per (unit, result day) over
# a 1- or 7-day window, or the pre-period; `FUNNEL_SQL` runs the chain of steps over them.
FUNNEL_POST = "SELECT code, step, ts, day FROM funnel_rows WHERE post AND funnel = {f}"
FUNNEL_WINDOW = """
SELECT x.code, CAST(w.range AS INTEGER) AS r, x.step, x.ts, x.day
FROM funnel_rows AS x JOIN range({first}, {end}) AS w ON w.range BETWEEN x.day AND x.day + {span}
WHERE x.post AND x.funnel = {f}
"""
FUNNEL_PRE = "SELECT code, step, ts, day FROM funnel_rows WHERE NOT post AND funnel = {f}"
# Users mode: per key, the earliest event of each step at or after the previous step's.
USERS_FIRST = "s0 AS (SELECT {key}, min(ts) AS t, min(day) AS day FROM src WHERE step = 0 GROUP BY {key})"
USERS_STEP = """s{s} AS (
    SELECT {r_key}, min(r.ts) AS t, min(r.day) AS day FROM src AS r JOIN s{prev} AS c ON {on}
    WHERE r.step = {s} AND r.ts {op} c.t GROUP BY {r_key}
)"""
# Events mode: each first-step event starts an attempt, which lasts until the next one; each step
# is the first event of that step after the previous step's (ASOF), before the attempt ends.
EVENTS_FIRST = """s0 AS (
    SELECT {key}, ts AS t, day, lead(ts) OVER (PARTITION BY {key} ORDER BY ts) AS t_next
    FROM src WHERE step = 0
)"""
EVENTS_STEP = """s{s} AS (
    SELECT {c_key}, c.t_next, r.ts AS t, r.day
    FROM s{prev} AS c ASOF JOIN (SELECT * FROM src WHERE step = {s}) AS r ON {on} AND r.ts {op} c.t
    WHERE c.t_next IS NULL OR r.ts < c.t_next
)"""
# Completions (c) and starts (b) per group of `by`: (unit, day) for cumulative windows, the day
# an attempt completed or started; (unit, result day) for short windows; unit for the pre-period.
FUNNEL_SQL = """
WITH src AS ({src}), {chain}
SELECT {by}, CAST(sum(c) AS DOUBLE) AS c, CAST(sum(b) AS DOUBLE) AS b FROM (
    SELECT {by}, 1 AS c, 0 AS b FROM s{last}{starts}
) AS x GROUP BY {by}
"""
FUNNEL_STARTS = "\n    UNION ALL SELECT {by}, 0 AS c, 1 AS b FROM s0"

# 4. Per analysed unit and result day r from its exposure day: the window's sums.
POST_SQL = """
SELECT code, r, g, CAST(r - greatest(e_day, {first_day}) + 1 AS DOUBLE) AS days{outer}
FROM (
    SELECT x.code, x.r, x.g, x.e_day{inner}
    FROM (
        SELECT e.code, e.g, e.e_day, CAST(d.range AS INTEGER) AS r
        FROM exposed AS e JOIN range({first}, {end}) AS d ON d.range >= e.e_day
        WHERE e.g >= 0
    ) AS x
    LEFT JOIN unit_days AS u ON u.code = x.code AND u.day = x.r{joins}
) AS grid
WINDOW w AS (PARTITION BY code ORDER BY r ROWS BETWEEN {frame} PRECEDING AND CURRENT ROW)
"""
PRE_UNITS = "SELECT code{sums} FROM unit_days WHERE NOT post GROUP BY code"

# 5. Unit values of the computed metrics, and the winsorization thresholds per result day.
VALUES_SQL = """
SELECT p.r, p.g, p.code{values}
FROM post AS p{joins}
"""
THRESHOLDS_SQL = "SELECT r{quantiles} FROM unit_values GROUP BY r"
QUANTILE = ", quantile_cont({c}, {q}) FILTER (WHERE {c} <> 0 AND isfinite({c})) AS {c}"
# 6. The statistics per (result day, group), one result day at a time (a day's units in memory,
# not every day's): the capped values in a fixed order (one sort), then aggregated by a single
# thread reading them in that order (STATS_THREADS).
STATS_ROWS = """
SELECT u.r, u.g{capped} FROM unit_values AS u{join}
WHERE u.r = {day}
ORDER BY u.g, u.code
"""
STATS_SQL = """
SELECT v.r, v.g, count(*) AS n{aggregates}
FROM unit_stats AS v
GROUP BY v.r, v.g ORDER BY v.r, v.g
"""
STATS_THREADS = 1
CAPPED = ", least(u.{c}, coalesce(t.{c}, u.{c})) AS {c}"


@dataclasses.dataclass
class DayResult:
    ds: str
    records: list[GroupStatistics]
    units: dict[str, int]


@dataclasses.dataclass
class Analysis:
    days: list[DayResult]
    health: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class _Scope:
    """Column expressions of one unit's sums: post-exposure (the `post` row) or its pre-period."""

    plan: EntityPlan
    pre: bool

    def n(self, a: int) -> str:
        return f"coalesce(q.n{a}, 0.0)" if self.pre else f"p.n{a}"

    def s(self, a: int) -> str:
        """The summed value; count and distinct atoms sum their events' count."""
        if self.plan.atoms[a].measure not in ("value", "metadata"):
            return self.n(a)
        return f"coalesce(q.s{a}, 0.0)" if self.pre else f"p.s{a}"

    def k(self, a: int) -> str:
        """Days with an event of the atom."""
        return f"coalesce(q.k{a}, 0.0)" if self.pre else f"p.k{a}"

    def d(self, a: int) -> str:
        return f"coalesce(qd.d{a}, 0.0)" if self.pre else f"p.d{a}"

    def funnel(self, f: int) -> tuple[str, str]:
        """(completions, starts); users mode completes at most once."""
        if self.pre:
            return f"coalesce(qf{f}.c, 0.0)", f"coalesce(qf{f}.b, 0.0)"
        return f"p.c{f}", f"p.b{f}"

    def days(self) -> str:
        return f"{float(PRE_DAYS)!r}" if self.pre else "p.days"


def _sum(terms: list[str]) -> str:
    return "(" + " + ".join(terms) + ")" if terms else "0.0"


def _divided(x: str, d: str) -> str:
    """x/d, 0 where d is 0 (a ratio collapsed to a unit value)."""
    return f"(CASE WHEN {d} <> 0 THEN {x} / {d} ELSE 0.0 END)"


def unit_values(metric: MetricPlan, scope: _Scope) -> tuple[str, str | None]:
    """SQL of a metric's unit value (numerator, denominator or None), not winsorized.

    (docs/statistics.md, 'Unit values per metric type'.)
    """
    atoms = scope.plan.atoms
    t = metric.type
    if t in ("event_count", "event_count_custom"):
        return _sum([scope.d(a) if atoms[a].distinct else scope.n(a) for a in metric.atoms]), None
    if t == "event_user":
        return f"(CASE WHEN {_sum([scope.n(a) for a in metric.atoms])} > 0 THEN 1.0 ELSE 0.0 END)", None
    if t == "event_dau":
        days = scope.days()
        return f"(CASE WHEN {days} > 0 THEN {scope.k(metric.atoms[0])} / {days} ELSE 0.0 END)", None
    if t == "sum":
        return _sum([scope.s(a) for a in metric.atoms]), None
    if t == "composite_sum":
        terms = []
        for c in metric.components:
            cx, cd = unit_values(c, scope)
            terms.append(cx if cd is None else _divided(cx, cd))
        return _sum(terms), None
    if t == "ratio":
        num, den = metric.components
        nx, nd = unit_values(num, scope)
        dx, dd = unit_values(den, scope)
        return (nx if nd is None else _divided(nx, nd)), (dx if dd is None else _divided(dx, dd))
    if t == "funnel" and metric.funnel is not None:
        completions, starts = scope.funnel(metric.funnel)
        return completions, (starts if scope.plan.funnels[metric.funnel].mode == "events" else None)
    return "0.0", None


@dataclasses.dataclass
class _Columns:
    """The value columns of one metric in `unit_values`: (x, p) or (m, d, pre m, pre d)."""

    metric: MetricPlan
    names: list[str]
    capped: list[bool]

    @property
    def ratio(self) -> bool:
        return len(self.names) == 4

    @property
    def pre(self) -> list[str]:
        return self.names[len(self.names) // 2 :]

    @property
    def post(self) -> list[str]:
        return self.names[: len(self.names) // 2]


def _metric_columns(plan: EntityPlan, metrics: list[MetricPlan]) -> tuple[list[_Columns], list[str]]:
    """Each metric's columns and their SELECT expressions."""
    post, pre = _Scope(plan, False), _Scope(plan, True)
    out, selects = [], []
    for i, metric in enumerate(metrics):
        x, den = unit_values(metric, post)
        px, pden = unit_values(metric, pre)
        if den is None:
            names, exprs = [f"x{i}", f"p{i}"], [x, px]
            capped = [metric.type in WINSORIZED] * 2
        else:
            num_type, den_type = (
                (metric.components[0].type, metric.components[1].type) if metric.type == "ratio" else ("", "")
            )
            names, exprs = [f"x{i}", f"d{i}", f"p{i}", f"q{i}"], [x, den, px, pden or "0.0"]
            capped = [num_type in WINSORIZED, den_type in WINSORIZED] * 2
        out.append(_Columns(metric, names, capped))
        selects += [f",\n    CAST({e} AS DOUBLE) AS {n}" for n, e in zip(names, exprs, strict=True)]
    return out, selects


def _funnel_sql(funnel: Funnel, src: str, key: list[str], by: list[str]) -> str:
    """Completions and starts of a funnel over `src` rows, the chain keyed by `key`, summed by `by`."""
    k = len(funnel.steps)
    same = [s > 0 and funnel.steps[s] == funnel.steps[s - 1] for s in range(k)]
    key_sql = ", ".join(key)
    if funnel.mode == "users":
        chain = [USERS_FIRST.format(key=key_sql)]
        for s in range(1, k):
            chain.append(
                USERS_STEP.format(
                    s=s,
                    prev=s - 1,
                    r_key=", ".join(f"r.{c}" for c in key),
                    on=" AND ".join(f"r.{c} = c.{c}" for c in key),
                    op=">" if same[s] else ">=",
                )
            )
        starts = ""
    else:
        chain = [EVENTS_FIRST.format(key=key_sql)]
        for s in range(1, k):
            chain.append(
                EVENTS_STEP.format(
                    s=s,
                    prev=s - 1,
                    c_key=", ".join(f"c.{c}" for c in key),
                    on=" AND ".join(f"c.{c} = r.{c}" for c in key),
                    op=">" if same[s] else ">=",
                )
            )
        starts = FUNNEL_STARTS.format(by=", ".join(by))
    return FUNNEL_SQL.format(src=src, chain=",\n".join(chain), by=", ".join(by), last=k - 1, starts=starts)


class _Statements:
    """Runs the statements; drops the temporary tables they made as soon as they are not needed."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.made: dict[str, str] = {}  # name -> TABLE or VIEW

    def table(self, name: str, select: str) -> None:
        self.con.execute(TABLE.format(name=name, select=select))
        self.made[name] = "TABLE"

    def view(self, name: str, select: str) -> None:
        self.con.execute(VIEW.format(name=name, select=select))
        self.made[name] = "VIEW"

    def drop(self, *names: str) -> None:
        """Drop these (all, without names), views first."""
        for name in sorted(names or list(self.made), key=lambda n: self.made.get(n) != "VIEW"):
            kind = self.made.pop(name, None)
            if kind is not None:
                self.con.execute(f"DROP {kind} IF EXISTS {name}")


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
    sql = _Statements(con)
    try:
        return _analyse(sql, plan, days, parts, healths, first_result, metric_ids, progress)
    finally:
        sql.drop()


def _analyse(
    sql: _Statements,
    plan: EntityPlan,
    days: list[str],
    parts: list[Parts],
    healths: list[dict[str, int]],
    first_result: int,
    metric_ids: set[str] | None,
    progress: Callable[[str], None] | None,
) -> Analysis:
    con = sql.con
    n_days = len(days)
    analysed = plan.analysed_groups
    # 1. First exposures.
    selects = [
        EXPOSURE_DAY.format(day=i, file=literal(str(parts[i]["units"]))) for i in range(first_result, n_days)
    ]
    cases = " ".join(f"WHEN {literal(g)} THEN {c}" for c, g in enumerate(analysed)) or "WHEN NULL THEN -1"
    sql.table(
        "exposed",
        EXPOSED_SQL.format(
            cases=cases, sep=literal(GROUP_SEP), days="\nUNION ALL\n".join(selects) or EXPOSURE_NONE
        ),
    )
    exposed_units, crossover_units = con.execute(EXPOSED_COUNTS).fetchone() or (0, 0)

    # 2. Unit days, distinct values, funnel steps.
    columns = []
    for a, atom in enumerate(plan.atoms):
        columns.append(("n", a))
        if atom.measure in ("value", "metadata"):
            columns.append(("s", a))
    sql.table(
        "unit_days",
        "\nUNION ALL\n".join(
            UNIT_DAY.format(
                day=d,
                pre=PRE_DAYS,
                file=literal(str(parts[d]["units"])),
                columns="".join(UNIT_DAY_COLUMN.format(day=d, m=m, a=a) for m, a in columns),
            )
            for d in range(n_days)
        ),
    )
    distinct_atoms = [a for a, atom in enumerate(plan.atoms) if atom.distinct]
    for name, template, part, wanted in (
        ("distinct_rows", DISTINCT_DAY, "distinct", bool(distinct_atoms)),
        ("funnel_rows", FUNNEL_DAY, "funnel", bool(plan.funnels)),
    ):
        if wanted:
            sql.table(
                name,
                "\nUNION ALL\n".join(
                    template.format(
                        day=d,
                        file=literal(str(parts[d][part])),
                        post=POST_ROW.format(day=d),
                        pre=PRE_ROW.format(day=d, pre=PRE_DAYS),
                    )
                    for d in range(n_days)
                ),
            )

    # 3-4. Window sums per (unit, result day); pre-period sums per unit.
    cumulative = plan.rollup == -1
    span = max(plan.rollup, 1) - 1
    window = {"first": first_result, "end": n_days, "span": span}
    inner, outer, joins = [], [], []
    dau_atoms = {m.atoms[0] for m in _all_metrics(plan.metrics) if m.type == "event_dau" and m.atoms}
    for m, a in columns:
        inner.append(f", coalesce(u.{m}{a}, 0.0) AS {m}{a}")
        outer.append(f", sum({m}{a}) OVER w AS {m}{a}")
    for a in sorted(dau_atoms):
        inner.append(f", CASE WHEN u.n{a} > 0 THEN 1.0 ELSE 0.0 END AS k{a}")
        outer.append(f", sum(k{a}) OVER w AS k{a}")
    if distinct_atoms:
        counts = "".join(
            (DISTINCT_NEW_COUNT if cumulative else DISTINCT_COUNT).format(a=a) for a in distinct_atoms
        )
        if cumulative:
            sql.table("distinct_post", DISTINCT_NEW.format(counts=counts))
            joins.append("\n    LEFT JOIN distinct_post AS dp ON dp.code = x.code AND dp.day = x.r")
        else:
            sql.table("distinct_post", DISTINCT_WINDOW.format(counts=counts, **window))
            joins.append("\n    LEFT JOIN distinct_post AS dp ON dp.code = x.code AND dp.r = x.r")
        for a in distinct_atoms:
            inner.append(f", CAST(coalesce(dp.d{a}, 0) AS DOUBLE) AS d{a}")
            outer.append(f", sum(d{a}) OVER w AS d{a}" if cumulative else f", d{a}")
        sql.table(
            "pre_distinct",
            DISTINCT_PRE.format(counts="".join(DISTINCT_COUNT.format(a=a) for a in distinct_atoms)),
        )
        sql.drop("distinct_rows")
    for f, funnel in enumerate(plan.funnels):
        if cumulative:
            post_sql = _funnel_sql(funnel, FUNNEL_POST.format(f=f), ["code"], ["code", "day"])
            on = f"f{f}.day = x.r"
        else:
            post_sql = _funnel_sql(funnel, FUNNEL_WINDOW.format(f=f, **window), ["code", "r"], ["code", "r"])
            on = f"f{f}.r = x.r"
        sql.table(f"funnel_post_{f}", post_sql)
        sql.table(f"funnel_pre_{f}", _funnel_sql(funnel, FUNNEL_PRE.format(f=f), ["code"], ["code"]))
        joins.append(f"\n    LEFT JOIN funnel_post_{f} AS f{f} ON f{f}.code = x.code AND {on}")
        for m in ("c", "b"):
            inner.append(f", coalesce(f{f}.{m}, 0.0) AS {m}{f}")
            outer.append(f", sum({m}{f}) OVER w AS {m}{f}" if cumulative else f", {m}{f}")
    sql.drop("funnel_rows")
    sql.table(
        "post",
        POST_SQL.format(
            first_day="e_day" if cumulative else f"r - {span}",
            outer="".join(outer),
            inner="".join(inner),
            joins="".join(joins),
            frame="UNBOUNDED" if cumulative else str(span),
            **{k: v for k, v in window.items() if k != "span"},
        ),
    )
    pre_sums = "".join(f", sum({m}{a}{' ORDER BY day' if m == 's' else ''}) AS {m}{a}" for m, a in columns)
    pre_sums += "".join(
        f", CAST(count(*) FILTER (WHERE n{a} > 0) AS DOUBLE) AS k{a}" for a in sorted(dau_atoms)
    )
    sql.table("pre_units", PRE_UNITS.format(sums=pre_sums))
    sql.drop("unit_days", "distinct_post", *(f"funnel_post_{f}" for f in range(len(plan.funnels))))

    # 5. Unit values and thresholds.
    metrics = [m for m in plan.metrics if not m.missing and (metric_ids is None or m.id in metric_ids)]
    metric_columns, values = _metric_columns(plan, metrics)
    pre_joins = ["\nLEFT JOIN pre_units AS q ON q.code = p.code"]
    if distinct_atoms:
        pre_joins.append("\nLEFT JOIN pre_distinct AS qd ON qd.code = p.code")
    pre_joins += [
        f"\nLEFT JOIN funnel_pre_{f} AS qf{f} ON qf{f}.code = p.code" for f in range(len(plan.funnels))
    ]
    sql.view("unit_values", VALUES_SQL.format(values="".join(values), joins="".join(pre_joins)))
    capped = [c for mc in metric_columns for c, cap in zip(mc.names, mc.capped, strict=True) if cap]
    if capped:
        quantiles = "".join(QUANTILE.format(c=c, q=WINSOR_QUANTILE) for c in capped)
        sql.table("thresholds", THRESHOLDS_SQL.format(quantiles=quantiles))

    # 6. Statistics per (result day, group).
    aggregates = []
    for mc in metric_columns:
        names = mc.names
        aggregates += [f",\n    avg({c}) AS {c}_mean" for c in names]
        for i, left in enumerate(names):
            for right in names[i:]:
                moment = f"var_pop({left})" if left == right else f"covar_pop({left}, {right})"
                aggregates.append(f",\n    {moment} * count(*) AS {left}_{right}")
        aggregates.append(
            f",\n    count(*) FILTER (WHERE {' OR '.join(f'{c} <> 0' for c in mc.pre)}) AS {names[0]}_nz"
        )
        aggregates.append(f",\n    bool_or({' OR '.join(f'{c} <> 0' for c in mc.post)}) AS {names[0]}_any")
    all_names = [c for mc in metric_columns for c in mc.names]
    capped_sql = "".join(CAPPED.format(c=c) if c in capped else f", u.{c}" for c in all_names)
    join = "\nLEFT JOIN thresholds AS t ON t.r = u.r" if capped else ""
    rows = []
    for r in range(first_result, n_days):
        sql.table("unit_stats", STATS_ROWS.format(capped=capped_sql, join=join, day=r))
        names, stats = _in_order(con, STATS_SQL.format(aggregates="".join(aggregates)))
        rows += [dict(zip(names, row, strict=True)) for row in stats]
        sql.drop("unit_stats")
    by_day: dict[int, dict[int, dict[str, Any]]] = {}
    for row in rows:
        by_day.setdefault(row["r"], {})[row["g"]] = row
    new_units: dict[int, dict[int, int]] = {}
    for e_day, g, count in con.execute(UNITS_PER_DAY).fetchall():
        new_units.setdefault(e_day, {})[g] = count

    results: list[DayResult] = []
    first_seen: dict[str, str] = {}
    last_seen: dict[str, str] = {}
    units = [0] * len(analysed)
    for d in range(first_result, n_days):
        ds = days[d]
        if progress:
            progress(ds)
        for g, count in new_units.get(d, {}).items():
            units[g] += count
        day_rows = by_day.get(d, {})
        records = []
        for mc in metric_columns:
            metric = mc.metric
            if any(row[f"{mc.names[0]}_any"] for row in day_rows.values()):
                first_seen.setdefault(metric.id, ds)
                last_seen[metric.id] = ds
            for g, gid in enumerate(analysed):
                group_row = day_rows.get(g)
                if group_row is not None:
                    records.append(_record(plan, metric, mc, group_row, ds, gid))
        results.append(DayResult(ds, records, dict(zip(analysed, units, strict=True))))

    computed = [m for m in plan.metrics if metric_ids is None or m.id in metric_ids]
    health = _health(
        plan, results, healths[first_result:], crossover_units, exposed_units, first_seen, last_seen, computed
    )
    return Analysis(results, health)


def _in_order(con: duckdb.DuckDBPyConnection, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of `query` run by STATS_THREADS threads (its inputs read in table order)."""
    threads = con.execute("SELECT current_setting('threads')").fetchone()
    con.execute(f"SET threads = {STATS_THREADS}")
    try:
        cursor = con.execute(query)
        return [d[0] for d in cursor.description], cursor.fetchall()
    finally:
        con.execute(f"SET threads = {int(threads[0]) if threads else 1}")


def _all_metrics(metrics: list[MetricPlan]) -> list[MetricPlan]:
    """The metrics and their components, recursively."""
    out = []
    for m in metrics:
        out.append(m)
        out += _all_metrics(m.components)
    return out


def _record(
    plan: EntityPlan, metric: MetricPlan, mc: _Columns, row: dict[str, Any], ds: str, group_id: str
) -> GroupStatistics:
    """The stored record of one (metric, group) from its row of statistics."""
    names = mc.names
    k = len(names)
    comoments = [[0.0] * k for _ in range(k)]
    for i in range(k):
        for j in range(i, k):
            value = float(row[f"{names[i]}_{names[j]}"])
            comoments[i][j] = comoments[j][i] = max(value, 0.0) if i == j else value
    name, _, metric_type = metric.id.partition("::")
    return GroupStatistics(
        entityKind=plan.kind,  # type: ignore[arg-type]
        entityID=plan.id,
        ds=ds,
        metricID=metric.id,
        groupID=group_id,
        metricName=name,
        metricType=metric_type,
        directionality=metric.directionality,  # type: ignore[arg-type]
        kind="ratio" if mc.ratio else "mean",
        n=int(row["n"]),
        means=[float(row[f"{c}_mean"]) for c in names],
        comoments=comoments,
        preNonzero=int(row[f"{names[0]}_nz"]),
    )


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
