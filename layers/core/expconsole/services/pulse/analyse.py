# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters)
"""From per-day unit aggregates to cumulative group statistics per result day, in SQL; health checks.

DuckDB runs the whole combination over the stored day parts (local Parquet: `units`, `distinct`,
`funnel`, see aggregate.py); Python only shapes its result rows into `GroupStatistics` records
and the health summary. The stages, in order, each a function beside its SQL templates (`_analyse`
runs them top to bottom):

1. `_exposed`, table `exposed`: every unit's first valid exposure (day, time, group), numbered,
   and whether it crossed groups. A unit's exposure day decides which of its events count: on
   later days all of them, on the exposure day those at or after the exposure (the `np`/`sp`
   columns), and on the 7 days before it the CUPED pre-period.
2. `_unit_days`, table `unit_days`: per exposed unit and day (pre-period and post-exposure), each
   atom's count and sum; `_event_rows`: `distinct_rows` and `funnel_rows` likewise keep distinct
   values and funnel steps.
3. `_post`, table `post`: one row per (analysed unit, result day r ≥ its exposure day), each
   atom's sums over the rollup window (cumulative, or the last 1 or 7 days: a window function
   over the days), distinct counts and funnel progress over the same window (`_atom_sums`,
   `_distinct_sums`, `_funnel_sums`: their columns, and the tables they join). Cumulative
   windows add per-day contributions (the values first seen that day, the funnel attempts
   completed that day), so the events are read once whatever the number of result days; 1- and
   7-day windows count their days' rows again for each result day.
4. `_pre_units`, table `pre_units` (and `pre_distinct`, `funnel_pre_*` beside their post forms):
   per unit, the same over its pre-period.
5. `_unit_values`, view `unit_values`: each metric's unit values (docs/statistics.md, 'Unit
   values per metric type') from those columns; `_thresholds`, table `thresholds`: per result
   day, the winsorization threshold of each capped column (the exact linear 99.9th percentile of
   the non-zero values, `quantile_cont`, as numpy's default percentile).
6. `_statistics`, per (result day, group): n, the mean of each column and the centred
   co-moments `C_ij = Σ(a_i − ā_i)(a_j − ā_j)` as `var_pop·n` / `covar_pop·n` (DuckDB's
   streaming Welford updates, never raw power sums), the units with pre-period data, and
   whether the metric had any non-zero value (the health check's metric dates).
7. `_day_results`: the `GroupStatistics` records per result day, metric and group, and the units
   per group (from the units first exposed each day, `_new_units`); `_health`: the health summary
   of the latest day.

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
ExposureCounts = dict[str, int]  # exposures by status (aggregate.HEALTH_KEYS): a day's, or summed
# docs/statistics.md, 'Winsorization': capped at the 99.9th percentile of the non-zero values
WINSOR_QUANTILE = 0.999


@dataclasses.dataclass
class DayResult:
    ds: str
    records: list[GroupStatistics]
    units: dict[str, int]


@dataclasses.dataclass(frozen=True)
class HealthGroup:
    """An enabled group as the health checks see it: its configured size as configured (or None)."""

    id: str
    name: str
    size: Any


@dataclasses.dataclass(frozen=True)
class AnalysisHealth:
    """What the health checks judge (services.pulse.run.health_doc), as of the latest result day."""

    ds: str | None
    units: dict[str, int]  # group id -> units exposed up to `ds`
    exposed_units: int
    crossover_units: int
    srm_status: str  # srm.SrmStatus
    srm_p_value: float | None
    exposures: ExposureCounts  # over every day read
    missing_metrics: list[str]
    metric_dates: dict[str, tuple[str | None, str | None]]  # metric id -> (first, last) day with data
    groups: list[HealthGroup]

    def with_exposures(self, days: list[ExposureCounts]) -> AnalysisHealth:
        """This summary counting the exposures of more days too (those read past a decision)."""
        counts = dict(self.exposures)
        for day in days:
            for key, value in day.items():
                counts[key] = counts.get(key, 0) + int(value)
        return dataclasses.replace(self, exposures=counts)


@dataclasses.dataclass
class Analysis:
    days: list[DayResult]
    health: AnalysisHealth | None  # None when no day was analysed


TABLE = "CREATE OR REPLACE TEMP TABLE {name} AS {select}"
VIEW = "CREATE OR REPLACE TEMP VIEW {name} AS {select}"


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
    healths: list[ExposureCounts],
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
    healths: list[ExposureCounts],
    first_result: int,
    metric_ids: set[str] | None,
    progress: Callable[[str], None] | None,
) -> Analysis:
    """The stages of the module docstring, in order."""
    window = _Window.of(plan, first_result, len(days))
    atoms = _AtomColumns.of(plan)
    exposure = _exposed(sql, plan, parts, window)  # 1
    _unit_days(sql, parts, window, atoms)  # 2
    _event_rows(sql, plan, parts, window, atoms)
    sums = [_atom_sums(atoms), _distinct_sums(sql, window, atoms), *_funnel_sums(sql, plan, window)]  # 3
    _post(sql, window, sums)
    _pre_units(sql, plan, atoms)  # 4
    metrics = [m for m in plan.metrics if not m.missing and (metric_ids is None or m.id in metric_ids)]
    columns = _unit_values(sql, plan, metrics, atoms)  # 5
    capped = _thresholds(sql, columns)
    rows = _statistics(sql, columns, capped, window)  # 6
    new_units = _new_units(sql.con)
    results, seen = _day_results(plan, days, window, columns, rows, new_units, progress)  # 7
    computed = [m for m in plan.metrics if metric_ids is None or m.id in metric_ids]
    health = _health(plan, results, healths[first_result:], exposure, seen, computed)
    return Analysis(results, health)


# --- the stages' shared inputs ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Window:
    """The result days (indexes `first` to `end` - 1) and the rollup window of each: cumulative
    from the exposure day, or the result day and the `span` days before it."""

    first: int
    end: int
    cumulative: bool
    span: int

    @classmethod
    def of(cls, plan: EntityPlan, first: int, end: int) -> _Window:
        return cls(first, end, plan.rollup == -1, max(plan.rollup, 1) - 1)

    @property
    def days(self) -> range:
        """The result days."""
        return range(self.first, self.end)

    @property
    def read(self) -> range:
        """Every day read: the pre-period of the first result day to the last result day."""
        return range(self.end)

    def range_sql(self) -> dict[str, int]:
        """The window's placeholders of the 1- and 7-day templates."""
        return {"first": self.first, "end": self.end, "span": self.span}


@dataclasses.dataclass(frozen=True)
class _AtomColumns:
    """The per-atom columns: in `unit_days` each atom's count n<a> and the sum s<a> of value and
    metadata atoms (`sums`, as (letter, atom)); the days with an event k<a> of `event_dau` metrics'
    atoms (`days`); the distinct counts d<a> of distinct atoms (`distinct`)."""

    sums: list[tuple[str, int]]
    days: list[int]
    distinct: list[int]

    @classmethod
    def of(cls, plan: EntityPlan) -> _AtomColumns:
        sums = []
        for a, atom in enumerate(plan.atoms):
            sums.append(("n", a))
            if atom.measure in ("value", "metadata"):
                sums.append(("s", a))
        dau = {m.atoms[0] for m in _all_metrics(plan.metrics) if m.type == "event_dau" and m.atoms}
        distinct = [a for a, atom in enumerate(plan.atoms) if atom.distinct]
        return cls(sums, sorted(dau), distinct)


@dataclasses.dataclass(frozen=True)
class _Sums:
    """Fragments of `POST_SQL`: the columns of the grid (`inner`), their window sums (`outer`) and
    the tables joined to the grid for them (`joins`)."""

    inner: list[str] = dataclasses.field(default_factory=list)
    outer: list[str] = dataclasses.field(default_factory=list)
    joins: list[str] = dataclasses.field(default_factory=list)


# --- 1. first exposures -------------------------------------------------------------------------------

# Every unit's first valid exposure (day, time, group code), numbered, and whether it crossed.
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


@dataclasses.dataclass(frozen=True)
class _Exposure:
    units: int  # units with a valid exposure
    crossover: int  # of which exposed to more than one group


def _exposed(sql: _Statements, plan: EntityPlan, parts: list[Parts], window: _Window) -> _Exposure:
    """Table `exposed` (exposures from the first result day on); how many units, how many crossed."""
    selects = [EXPOSURE_DAY.format(day=i, file=literal(str(parts[i]["units"]))) for i in window.days]
    analysed = plan.analysed_groups
    cases = " ".join(f"WHEN {literal(g)} THEN {c}" for c, g in enumerate(analysed)) or "WHEN NULL THEN -1"
    sql.table(
        "exposed",
        EXPOSED_SQL.format(
            cases=cases, sep=literal(GROUP_SEP), days="\nUNION ALL\n".join(selects) or EXPOSURE_NONE
        ),
    )
    units, crossover = sql.con.execute(EXPOSED_COUNTS).fetchone() or (0, 0)
    return _Exposure(units, crossover)


# --- 2. unit days, distinct values, funnel steps ------------------------------------------------------

# Per exposed unit and day from 7 days before its exposure day: each atom's count n<a> (and
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


def _unit_days(sql: _Statements, parts: list[Parts], window: _Window, atoms: _AtomColumns) -> None:
    """Table `unit_days`: per exposed unit and day (pre-period and post-exposure), the atom sums."""
    sql.table(
        "unit_days",
        "\nUNION ALL\n".join(
            UNIT_DAY.format(
                day=d,
                pre=PRE_DAYS,
                file=literal(str(parts[d]["units"])),
                columns="".join(UNIT_DAY_COLUMN.format(day=d, m=m, a=a) for m, a in atoms.sums),
            )
            for d in window.read
        ),
    )


def _event_rows(
    sql: _Statements, plan: EntityPlan, parts: list[Parts], window: _Window, atoms: _AtomColumns
) -> None:
    """Tables `distinct_rows` (when an atom counts distinct values) and `funnel_rows` (when the plan
    has funnels): the exposed units' rows that count, pre-period or post-exposure."""
    for name, template, part, wanted in (
        ("distinct_rows", DISTINCT_DAY, "distinct", bool(atoms.distinct)),
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
                    for d in window.read
                ),
            )


# --- 3. window sums per (unit, result day) ------------------------------------------------------------

# Distinct values over the window: cumulative windows count each value on the day it is first
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


def _atom_sums(atoms: _AtomColumns) -> _Sums:
    """The atoms' counts and sums over the window, and the days with an event (`event_dau`)."""
    sums = _Sums()
    for m, a in atoms.sums:
        sums.inner.append(f", coalesce(u.{m}{a}, 0.0) AS {m}{a}")
        sums.outer.append(f", sum({m}{a}) OVER w AS {m}{a}")
    for a in atoms.days:
        sums.inner.append(f", CASE WHEN u.n{a} > 0 THEN 1.0 ELSE 0.0 END AS k{a}")
        sums.outer.append(f", sum(k{a}) OVER w AS k{a}")
    return sums


def _distinct_sums(sql: _Statements, window: _Window, atoms: _AtomColumns) -> _Sums:
    """Tables `distinct_post` (per unit and day, or result day) and `pre_distinct` (per unit): the
    distinct atoms' counts; `distinct_rows` is read no more."""
    sums = _Sums()
    if not atoms.distinct:
        return sums
    cumulative = window.cumulative
    counts = "".join(
        (DISTINCT_NEW_COUNT if cumulative else DISTINCT_COUNT).format(a=a) for a in atoms.distinct
    )
    if cumulative:
        sql.table("distinct_post", DISTINCT_NEW.format(counts=counts))
        sums.joins.append("\n    LEFT JOIN distinct_post AS dp ON dp.code = x.code AND dp.day = x.r")
    else:
        sql.table("distinct_post", DISTINCT_WINDOW.format(counts=counts, **window.range_sql()))
        sums.joins.append("\n    LEFT JOIN distinct_post AS dp ON dp.code = x.code AND dp.r = x.r")
    for a in atoms.distinct:
        sums.inner.append(f", CAST(coalesce(dp.d{a}, 0) AS DOUBLE) AS d{a}")
        sums.outer.append(f", sum(d{a}) OVER w AS d{a}" if cumulative else f", d{a}")
    sql.table(
        "pre_distinct",
        DISTINCT_PRE.format(counts="".join(DISTINCT_COUNT.format(a=a) for a in atoms.distinct)),
    )
    sql.drop("distinct_rows")
    return sums


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


def _funnel_sums(sql: _Statements, plan: EntityPlan, window: _Window) -> list[_Sums]:
    """Tables `funnel_post_<f>` and `funnel_pre_<f>` per funnel: completions and starts over the
    window and the pre-period; `funnel_rows` is read no more."""
    out = []
    cumulative = window.cumulative
    for f, funnel in enumerate(plan.funnels):
        if cumulative:
            post_sql = _funnel_sql(funnel, FUNNEL_POST.format(f=f), ["code"], ["code", "day"])
            on = f"f{f}.day = x.r"
        else:
            post_sql = _funnel_sql(
                funnel, FUNNEL_WINDOW.format(f=f, **window.range_sql()), ["code", "r"], ["code", "r"]
            )
            on = f"f{f}.r = x.r"
        sql.table(f"funnel_post_{f}", post_sql)
        sql.table(f"funnel_pre_{f}", _funnel_sql(funnel, FUNNEL_PRE.format(f=f), ["code"], ["code"]))
        sums = _Sums(joins=[f"\n    LEFT JOIN funnel_post_{f} AS f{f} ON f{f}.code = x.code AND {on}"])
        for m in ("c", "b"):
            sums.inner.append(f", coalesce(f{f}.{m}, 0.0) AS {m}{f}")
            sums.outer.append(f", sum({m}{f}) OVER w AS {m}{f}" if cumulative else f", {m}{f}")
        out.append(sums)
    sql.drop("funnel_rows")
    return out


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


# Per analysed unit and result day r from its exposure day: the window's sums.
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


def _post(sql: _Statements, window: _Window, sums: list[_Sums]) -> None:
    """Table `post`: one row per (analysed unit, result day), the window's sums of `sums`."""
    cumulative = window.cumulative
    sql.table(
        "post",
        POST_SQL.format(
            first_day="e_day" if cumulative else f"r - {window.span}",
            outer="".join(c for s in sums for c in s.outer),
            inner="".join(c for s in sums for c in s.inner),
            joins="".join(c for s in sums for c in s.joins),
            frame="UNBOUNDED" if cumulative else str(window.span),
            first=window.first,
            end=window.end,
        ),
    )


# --- 4. pre-period sums per unit ----------------------------------------------------------------------

PRE_UNITS = "SELECT code{sums} FROM unit_days WHERE NOT post GROUP BY code"


def _pre_units(sql: _Statements, plan: EntityPlan, atoms: _AtomColumns) -> None:
    """Table `pre_units`: per unit, the atoms' sums over its pre-period (value sums in day order:
    at most 7 terms, ordered so that a reload sums them alike); then the day tables are dropped."""
    sums = "".join(f", sum({m}{a}{' ORDER BY day' if m == 's' else ''}) AS {m}{a}" for m, a in atoms.sums)
    sums += "".join(f", CAST(count(*) FILTER (WHERE n{a} > 0) AS DOUBLE) AS k{a}" for a in atoms.days)
    sql.table("pre_units", PRE_UNITS.format(sums=sums))
    sql.drop("unit_days", "distinct_post", *(f"funnel_post_{f}" for f in range(len(plan.funnels))))


# --- 5. unit values and winsorization thresholds ------------------------------------------------------


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


VALUES_SQL = """
SELECT p.r, p.g, p.code{values}
FROM post AS p{joins}
"""


def _unit_values(
    sql: _Statements, plan: EntityPlan, metrics: list[MetricPlan], atoms: _AtomColumns
) -> list[_Columns]:
    """View `unit_values`: per (result day, unit), each metric's columns, post-exposure and pre-period."""
    columns, values = _metric_columns(plan, metrics)
    joins = ["\nLEFT JOIN pre_units AS q ON q.code = p.code"]
    if atoms.distinct:
        joins.append("\nLEFT JOIN pre_distinct AS qd ON qd.code = p.code")
    joins += [f"\nLEFT JOIN funnel_pre_{f} AS qf{f} ON qf{f}.code = p.code" for f in range(len(plan.funnels))]
    sql.view("unit_values", VALUES_SQL.format(values="".join(values), joins="".join(joins)))
    return columns


THRESHOLDS_SQL = "SELECT r{quantiles} FROM unit_values GROUP BY r"
QUANTILE = ", quantile_cont({c}, {q}) FILTER (WHERE {c} <> 0 AND isfinite({c})) AS {c}"


def _thresholds(sql: _Statements, columns: list[_Columns]) -> list[str]:
    """Table `thresholds` (when a column is capped): per result day, each capped column's
    winsorization threshold. The capped columns."""
    capped = [c for mc in columns for c, cap in zip(mc.names, mc.capped, strict=True) if cap]
    if capped:
        quantiles = "".join(QUANTILE.format(c=c, q=WINSOR_QUANTILE) for c in capped)
        sql.table("thresholds", THRESHOLDS_SQL.format(quantiles=quantiles))
    return capped


# --- 6. statistics per (result day, group) ------------------------------------------------------------

# One result day at a time (a day's units in memory, not every day's): the capped values in a
# fixed order (one sort), then aggregated by a single thread reading them in that order
# (STATS_THREADS).
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
StatRows = dict[int, dict[int, dict[str, Any]]]  # result day -> group code -> statistic -> value


def _statistics(sql: _Statements, columns: list[_Columns], capped: list[str], window: _Window) -> StatRows:
    """Per result day and group: n, means, co-moments, pre-period units and whether any value."""
    aggregates = []
    for mc in columns:
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
    all_names = [c for mc in columns for c in mc.names]
    capped_sql = "".join(CAPPED.format(c=c) if c in capped else f", u.{c}" for c in all_names)
    join = "\nLEFT JOIN thresholds AS t ON t.r = u.r" if capped else ""
    by_day: StatRows = {}
    for r in window.days:
        sql.table("unit_stats", STATS_ROWS.format(capped=capped_sql, join=join, day=r))
        names, stats = _in_order(sql.con, STATS_SQL.format(aggregates="".join(aggregates)))
        for row in stats:
            named = dict(zip(names, row, strict=True))
            by_day.setdefault(named["r"], {})[named["g"]] = named
        sql.drop("unit_stats")
    return by_day


def _in_order(con: duckdb.DuckDBPyConnection, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Column names and rows of `query` run by STATS_THREADS threads (its inputs read in table order)."""
    threads = con.execute("SELECT current_setting('threads')").fetchone()
    con.execute(f"SET threads = {STATS_THREADS}")
    try:
        cursor = con.execute(query)
        return [d[0] for d in cursor.description], cursor.fetchall()
    finally:
        con.execute(f"SET threads = {int(threads[0]) if threads else 1}")


UNITS_PER_DAY = "SELECT e_day, g, count(*) FROM exposed WHERE g >= 0 GROUP BY e_day, g"


def _new_units(con: duckdb.DuckDBPyConnection) -> dict[int, dict[int, int]]:
    """Units first exposed per day and group code."""
    new_units: dict[int, dict[int, int]] = {}
    for e_day, g, count in con.execute(UNITS_PER_DAY).fetchall():
        new_units.setdefault(e_day, {})[g] = count
    return new_units


# --- 7. records and health ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _MetricDays:
    """Per metric id, the first and last result day with a non-zero value."""

    first: dict[str, str]
    last: dict[str, str]


def _day_results(
    plan: EntityPlan,
    days: list[str],
    window: _Window,
    columns: list[_Columns],
    rows: StatRows,
    new_units: dict[int, dict[int, int]],
    progress: Callable[[str], None] | None,
) -> tuple[list[DayResult], _MetricDays]:
    """Each result day's records and units per group; the days each metric had data."""
    analysed = plan.analysed_groups
    results: list[DayResult] = []
    seen = _MetricDays({}, {})
    units = [0] * len(analysed)
    for d in window.days:
        ds = days[d]
        if progress:
            progress(ds)
        for g, count in new_units.get(d, {}).items():
            units[g] += count
        day_rows = rows.get(d, {})
        records = []
        for mc in columns:
            metric = mc.metric
            if any(row[f"{mc.names[0]}_any"] for row in day_rows.values()):
                seen.first.setdefault(metric.id, ds)
                seen.last[metric.id] = ds
            for g, gid in enumerate(analysed):
                group_row = day_rows.get(g)
                if group_row is not None:
                    records.append(_record(plan, metric, mc, group_row, ds, gid))
        results.append(DayResult(ds, records, dict(zip(analysed, units, strict=True))))
    return results, seen


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
    healths: list[ExposureCounts],
    exposure: _Exposure,
    seen: _MetricDays,
    computed: list[MetricPlan],
) -> AnalysisHealth:
    """The health checks of the latest day: exposures, SRM, crossover, invalid exposures, metrics.

    Only the `computed` metrics (all but those a `metric` refresh leaves alone) are judged."""
    counts: ExposureCounts = {}
    for day_counts in healths:
        for key, value in day_counts.items():
            counts[key] = counts.get(key, 0) + int(value)
    latest = results[-1] if results else None
    units = latest.units if latest else {}
    groups = [g for g in plan.groups if not g.get("disabled")]
    observed = [units.get(g["id"], 0) for g in groups]
    sizes = [float(g.get("size") or 0) for g in groups]
    srm_status: str = "pass"
    srm_p_value: float | None = None
    if sum(observed) > 0 and sum(sizes) > 0 and len(groups) > 1:
        check = srm_check(observed, sizes)
        srm_status, srm_p_value = check.status, check.p_value
    return AnalysisHealth(
        ds=latest.ds if latest else None,
        units=units,
        exposed_units=exposure.units,
        crossover_units=exposure.crossover,
        srm_status=srm_status,
        srm_p_value=srm_p_value,
        exposures=counts,
        missing_metrics=[m.id for m in computed if m.missing or m.id not in seen.first],
        metric_dates={m.id: (seen.first.get(m.id), seen.last.get(m.id)) for m in computed},
        groups=[HealthGroup(g["id"], g["name"], g.get("size")) for g in groups],
    )
