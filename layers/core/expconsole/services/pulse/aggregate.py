"""Per-day unit aggregates of one experiment or holdout: the day's events reduced to units, in SQL.

For day D, every unit with an exposure or a metric event that day gets one row: its first
valid exposure of the day (time and group), and per atom (plan.Atom) the count `n<i>` and sum
`s<i>` of its matching events over the whole day, and `np<i>`/`sp<i>` over the events at or
after that exposure. Whether a day's events are post-exposure, pre-exposure (CUPED) or neither
depends on the unit's *first* exposure, which only the combination of days knows
(analyse.py); the day aggregate keeps both forms, so it depends on this day's events alone and
a daily run recomputes only the new day. Distinct-value atoms keep (unit, value, time) rows and
funnel steps keep (unit, step, time) rows, which the combination orders across days.

Exposures: the first `console::experiment_exposure` (metadata `experiment`, `group`) or
`console::holdout_exposure` (`holdout`, `heldOut`). Exposures before the start are ignored;
those to unknown or disabled groups, or at or after the decision, are counted (health) but do
not expose the unit.

The statements are the module's SQL templates below, filled with the plan's atoms and criteria
(`criterion_sql`); DuckDB runs them over the day's events (daydata.day_select) and writes the
three parts as Parquet.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import duckdb

from expconsole.services.pulse import engine
from expconsole.services.pulse.daydata import number_of
from expconsole.services.pulse.engine import literal
from expconsole.services.pulse.plan import Atom, EntityPlan

GROUP_SEP = "\x1f"
HEALTH_KEYS = ("valid", "unknownGroup", "disabledGroup", "afterDecision")
PARTS = ("units", "distinct", "funnel")


@dataclasses.dataclass
class DayEvents:
    """A day's events for aggregate_day: the connection, the SELECT of its events, where parts go."""

    con: duckdb.DuckDBPyConnection
    select: str
    out: Path


@dataclasses.dataclass
class DayAggregate:
    files: dict[str, Path]  # part name -> local Parquet file
    health: dict[str, int]


# The queries, written once: DuckDB runs them (engine.py materialises each step), and their
# Trino form (sqlglot) runs on Athena; tests/functional/test_pulse_sql.py checks both. They read
# `day_source` (daydata.COLUMNS: the raw or compacted day locally, the Glue table on Athena) and
# use only functions both engines have, so that text is not rewritten by hand for either.
EVENTS_SQL = """
SELECT * FROM (
    SELECT {unit} AS unit, event, "timestamp" AS ts, value, valuenumber, metadata{user}
    FROM day_source
    WHERE event IN ({events})
      AND ("timestamp" < {cutoff} OR (event = {exposure} AND "timestamp" < {exposure_cutoff}))
) AS e
WHERE unit IS NOT NULL
"""
EXPOSURES_SQL = """
SELECT unit, ts, grp,
    CASE
        WHEN grp IS NULL OR grp NOT IN ({known}) THEN 'unknownGroup'
        WHEN grp NOT IN ({enabled}) THEN 'disabledGroup'
        WHEN {decision} IS NOT NULL AND ts >= {decision} THEN 'afterDecision'
        WHEN ts >= {cutoff} THEN 'late'
        ELSE 'valid'
    END AS status
FROM (
    SELECT unit, ts, {group} AS grp FROM day_events WHERE event = {exposure} AND {ours} AND ts >= {start}
) AS x
"""
HEALTH_SQL = "SELECT status, count(*) AS n FROM day_exposures GROUP BY status"
FIRST_SQL = """
SELECT unit, min(ts) AS exp_ts, arg_min(grp, ts) AS exp_group,
    array_to_string(list_sort(list_distinct(list(grp))), {sep}) AS exp_groups
FROM day_exposures WHERE status = 'valid' GROUP BY unit
"""
ATOM_SQL = (
    "SELECT {index} AS atom, unit, ts, {weight} AS w, {distinct} AS dv FROM day_events"
    " WHERE event = {event} AND {where}"
)
ATOMS_EMPTY = (
    "SELECT CAST(NULL AS INTEGER) AS atom, CAST(NULL AS VARCHAR) AS unit, CAST(NULL AS BIGINT) AS ts,"
    " CAST(NULL AS DOUBLE) AS w, CAST(NULL AS VARCHAR) AS dv FROM day_events WHERE false"
)
UNITS_SQL = """
WITH atom_rows AS (
    SELECT a.atom, a.unit, a.w, a.ts >= f.exp_ts AS post
    FROM day_atoms a LEFT JOIN day_first f ON a.unit = f.unit
),
sums AS (SELECT unit{sums} FROM atom_rows GROUP BY unit)
SELECT coalesce(f.unit, s.unit) AS unit, f.exp_ts, f.exp_group, f.exp_groups{columns}
FROM day_first f FULL OUTER JOIN sums s ON f.unit = s.unit
"""
DISTINCT_SQL = """
SELECT CAST(atom AS INTEGER) AS atom, unit, dv AS value, ts FROM day_atoms
WHERE dv IS NOT NULL AND atom IN ({atoms})
"""
FUNNEL_ROWS = "SELECT {funnel} AS funnel, {step} AS step, unit, ts FROM day_atoms WHERE atom = {atom}"
FUNNEL_EMPTY = (
    "SELECT CAST(NULL AS INTEGER) AS funnel, CAST(NULL AS INTEGER) AS step, unit, ts FROM day_atoms"
    " WHERE false"
)
FUNNEL_SQL = """
SELECT CAST(funnel AS INTEGER) AS funnel, CAST(step AS INTEGER) AS step, unit, ts FROM ({union}) AS f
"""
# The steps in order; the first four are intermediate relations, the last four the day's results.
STEPS = ("day_events", "day_exposures", "day_first", "day_atoms")
OUTPUTS = ("health", *PARTS)
# Finite doubles (Python's float() refuses nan and inf): a comparison both engines evaluate alike.
FINITE = "BETWEEN -1.7976931348623157e308 AND 1.7976931348623157e308"


def _path(key: str) -> str:
    return literal("$." + json.dumps(key))


@dataclasses.dataclass(frozen=True)
class Field:
    """SQL expressions of one field of an event row: its text, number, null-ness and truthiness."""

    text: str
    number: str
    is_null: str
    true: str
    false: str


def json_field(doc: str, path: str) -> Field:
    """A field inside a JSON text column: scalars as text (strings as sent, numbers and booleans as
    JSON writes them), numbers from that text when finite."""
    text = f"json_extract_string({doc}, {path})"
    number = f"(CASE WHEN TRY_CAST({text} AS DOUBLE) {FINITE} THEN TRY_CAST({text} AS DOUBLE) END)"
    return Field(
        text=text,
        number=number,
        is_null=f"({text} IS NULL)",
        true=f"(lower({text}) = 'true')",
        false=f"(lower({text}) = 'false')",
    )


VALUE_FIELD = Field(
    text="value",
    number="valuenumber",
    is_null="(value IS NULL)",
    true="(lower(value) = 'true')",
    false="(lower(value) = 'false')",
)


def field_of(ctype: str, column: str) -> Field:
    """The field a criterion reads: the value, a metadata key, a user field or custom field."""
    if ctype == "value" or column.startswith("!service_"):
        return VALUE_FIELD
    if ctype == "metadata":
        return json_field("metadata", _path(column))
    if ctype == "user_custom":
        custom = literal("$.custom." + json.dumps(column))
        present = f'json_extract("user", {custom}) IS NOT NULL'
        own = json_field('"user"', custom)
        top = json_field('"user"', _path(column))

        def pick(a: str, b: str) -> str:
            return f"(CASE WHEN {present} THEN {a} ELSE {b} END)"

        return Field(
            *(pick(getattr(own, f), getattr(top, f)) for f in ("text", "number", "is_null", "true", "false"))
        )
    return json_field('"user"', _path(column))


def criterion_sql(ctype: str, column: str, condition: str, values: tuple[str, ...]) -> str:
    """One criterion: text comparisons; numbers for >, <, >=, <=, and '=' on numbers.

    (docs/statistics.md, 'Unit values per metric type'.)
    """
    f = field_of(ctype, column)
    if condition == "is_null":
        return f.is_null
    if condition == "non_null":
        return f"NOT {f.is_null}"
    if condition == "is_true":
        return f"coalesce({f.true}, false)"
    if condition == "is_false":
        return f"coalesce({f.false}, false)"
    listed = ", ".join(literal(v) for v in values) or "NULL"
    any_of = " OR ".join(f"strpos({f.text}, {literal(v)}) > 0" for v in values) or "false"
    if condition == "in":
        return f"coalesce({f.text} IN ({listed}), false)"
    if condition == "not_in":
        return f"({f.text} IS NULL OR NOT coalesce({f.text} IN ({listed}), false))"
    if condition == "contains":
        return f"({f.text} IS NOT NULL AND ({any_of}))"
    if condition == "not_contains":
        return f"({f.text} IS NULL OR NOT ({any_of}))"
    bound = number_of(values[0]) if values else None
    if condition == "=":
        if not values:
            return "false"
        numeric = f" OR {f.number} = {bound!r}" if bound is not None else ""
        return f"coalesce({f.text} = {literal(values[0])}{numeric}, false)"
    op = {">": ">", "<": "<", ">=": ">=", "<=": "<="}.get(condition)
    if op is None or bound is None:
        return "false"
    return f"coalesce({f.number} {op} {bound!r}, false)"


def unit_sql(id_type: str) -> str:
    """The unit id of an event for the plan's id type (NULL when the event has none)."""
    if id_type in ("userID", "stableID"):
        return id_type.lower()
    custom = literal("$.customIDs." + json.dumps(id_type))
    own, top = (f'json_extract_string("user", {path})' for path in (custom, _path(id_type)))
    return f"NULLIF(coalesce({own}, {top}), '')"


def needs_user(plan: EntityPlan) -> bool:
    """Whether the aggregate reads the user JSON: custom ids or user criteria."""
    user_criteria = any(c[0] in ("user", "user_custom") for a in plan.atoms for c in a.criteria)
    return plan.id_type not in ("userID", "stableID") or user_criteria


def _exposure_sql(plan: EntityPlan) -> tuple[str, str]:
    """(is this entity's exposure, its group or NULL) over day_events rows."""
    if plan.exposure_event.endswith("holdout_exposure"):
        held = json_field("metadata", _path("heldOut"))
        ours = json_field("metadata", _path("holdout")).text
        group = f"(CASE WHEN {held.true} THEN 'control' WHEN {held.false} THEN 'test' END)"
    else:
        ours = json_field("metadata", _path("experiment")).text
        group = json_field("metadata", _path("group")).text
    return f"coalesce({ours} = {literal(plan.id)}, false)", group


def _atom_sql(index: int, atom: Atom, plan: EntityPlan, cutoff_ms: int) -> str:
    where = [criterion_sql(*c) for c in atom.criteria]
    if atom.event == plan.exposure_event:
        where.append(f"ts < {cutoff_ms}")  # exposures past the end were read for health only
    if atom.measure == "value":
        weight = "coalesce(valuenumber, 0.0)"
    elif atom.measure == "metadata":
        weight = f"coalesce({json_field('metadata', _path(atom.key or '')).number}, 0.0)"
    else:
        weight = "CAST(NULL AS DOUBLE)"
    if atom.measure == "distinct":
        distinct = json_field("metadata", _path(atom.key)).text if atom.key else "value"
    else:
        distinct = "CAST(NULL AS VARCHAR)"
    return ATOM_SQL.format(
        index=index,
        weight=weight,
        distinct=distinct,
        event=literal(atom.event),
        where=" AND ".join(where) or "true",
    )


def _values(items: list[str]) -> str:
    return ", ".join(literal(i) for i in items) or "NULL"


def day_queries(plan: EntityPlan, cutoff_ms: int, exposure_cutoff_ms: int) -> dict[str, str]:
    """The SELECT of every step and output (STEPS, OUTPUTS), each reading `day_source` or earlier steps."""
    events_needed = sorted({a.event for a in plan.atoms} | {plan.exposure_event})
    ours, group = _exposure_sql(plan)
    atoms = [_atom_sql(i, a, plan, cutoff_ms) for i, a in enumerate(plan.atoms)]
    sums, columns = [], []
    for i, atom in enumerate(plan.atoms):
        sums += [
            f", count(*) FILTER (WHERE atom = {i}) AS n{i}",
            f", count(*) FILTER (WHERE atom = {i} AND post) AS np{i}",
        ]
        columns += [
            f", CAST(coalesce(s.n{i}, 0) AS DOUBLE) AS n{i}",
            f", CAST(coalesce(s.np{i}, 0) AS DOUBLE) AS np{i}",
        ]
        if atom.measure in ("value", "metadata"):
            sums += [
                f", sum(w) FILTER (WHERE atom = {i}) AS s{i}",
                f", sum(w) FILTER (WHERE atom = {i} AND post) AS sp{i}",
            ]
            columns += [f", coalesce(s.s{i}, 0.0) AS s{i}", f", coalesce(s.sp{i}, 0.0) AS sp{i}"]
    steps = [
        FUNNEL_ROWS.format(funnel=f, step=s, atom=a)
        for f, funnel in enumerate(plan.funnels)
        for s, a in enumerate(funnel.steps)
    ]
    distinct_atoms = [str(i) for i, a in enumerate(plan.atoms) if a.distinct]
    return {
        "day_events": EVENTS_SQL.format(
            unit=unit_sql(plan.id_type),
            user=', "user"' if needs_user(plan) else "",
            events=_values(events_needed),
            cutoff=cutoff_ms,
            exposure=literal(plan.exposure_event),
            exposure_cutoff=exposure_cutoff_ms,
        ),
        "day_exposures": EXPOSURES_SQL.format(
            known=_values([g["id"] for g in plan.groups]),
            enabled=_values([g["id"] for g in plan.groups if not g.get("disabled")]),
            decision="NULL" if plan.decision_ms is None else plan.decision_ms,
            cutoff=cutoff_ms,
            group=group,
            exposure=literal(plan.exposure_event),
            ours=ours,
            start=plan.start_ms,
        ),
        "day_first": FIRST_SQL.format(sep=literal(GROUP_SEP)),
        "day_atoms": "\nUNION ALL\n".join(atoms) if atoms else ATOMS_EMPTY,
        "health": HEALTH_SQL,
        "units": UNITS_SQL.format(sums="".join(sums), columns="".join(columns)),
        "distinct": DISTINCT_SQL.format(atoms=", ".join(distinct_atoms) or "NULL"),
        "funnel": FUNNEL_SQL.format(union="\nUNION ALL\n".join(steps) if steps else FUNNEL_EMPTY),
    }


def with_form(queries: dict[str, str], output: str) -> str:
    """One output as a single statement: the steps as common table expressions (Athena's form)."""
    ctes = ",\n".join(f"{name} AS ({queries[name].strip()})" for name in STEPS)
    return f"WITH {ctes}\n{queries[output].strip()}"


def aggregate_day(
    plan: EntityPlan, table: DayEvents, cutoff_ms: int, exposure_cutoff_ms: int | None = None
) -> DayAggregate:
    """The day's unit aggregates (events at or after `cutoff_ms` are left out), as Parquet files.

    Exposures up to `exposure_cutoff_ms` (default `cutoff_ms`) are read: those at or after
    `cutoff_ms` (the decision) only count for health, as `afterDecision` (or unknown/disabled).
    """
    con = table.con
    exposure_cutoff_ms = cutoff_ms if exposure_cutoff_ms is None else max(cutoff_ms, exposure_cutoff_ms)
    queries = day_queries(plan, cutoff_ms, exposure_cutoff_ms)
    con.execute(f"CREATE OR REPLACE TEMP VIEW day_source AS {table.select}")
    for name in STEPS:
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {engine.dialect(queries[name])}")
    health = dict.fromkeys(HEALTH_KEYS, 0)
    for status, count in con.execute(engine.dialect(queries["health"])).fetchall():
        if status in health:
            health[status] = int(count)
    table.out.mkdir(parents=True, exist_ok=True)
    files = {name: table.out / f"{name}.parquet" for name in PARTS}
    for name in PARTS:
        target = literal(str(files[name]))
        con.execute(f"COPY ({engine.dialect(queries[name])}) TO {target} (FORMAT parquet, COMPRESSION zstd)")
    for name in (*reversed(STEPS), "day_source"):
        con.execute(f"DROP {'VIEW' if name == 'day_source' else 'TABLE'} IF EXISTS {name}")
    return DayAggregate(files, health)


__all__ = ["Atom", "DayAggregate", "DayEvents", "aggregate_day", "criterion_sql", "day_queries", "with_form"]
