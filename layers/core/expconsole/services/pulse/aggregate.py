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


EVENTS_SQL = """
CREATE OR REPLACE TEMP TABLE day_events AS
SELECT * FROM (
    SELECT {unit} AS unit, event, "timestamp" AS ts, value, valueNumber, metadata{user}
    FROM ({select})
    WHERE event IN ({events})
      AND ("timestamp" < {cutoff} OR (event = {exposure} AND "timestamp" < {exposure_cutoff}))
)
WHERE unit IS NOT NULL
"""
EXPOSURES_SQL = """
CREATE OR REPLACE TEMP TABLE day_exposures AS
SELECT unit, ts, grp,
    CASE
        WHEN grp IS NULL OR grp NOT IN ({known}) THEN 'unknownGroup'
        WHEN grp NOT IN ({enabled}) THEN 'disabledGroup'
        WHEN {decision} IS NOT NULL AND ts >= {decision} THEN 'afterDecision'
        WHEN ts >= {cutoff} THEN 'late'
        ELSE 'valid'
    END AS status
FROM (SELECT unit, ts, {group} AS grp FROM day_events WHERE event = {exposure} AND {ours} AND ts >= {start})
"""
HEALTH_SQL = "SELECT status, count(*) FROM day_exposures GROUP BY status"
FIRST_SQL = """
CREATE OR REPLACE TEMP TABLE day_first AS
SELECT unit, min(ts) AS exp_ts, arg_min(grp, ts) AS exp_group,
    array_to_string(list_sort(list_distinct(list(grp))), {sep}) AS exp_groups
FROM day_exposures WHERE status = 'valid' GROUP BY unit
"""
ATOM_SQL = (
    "SELECT {index} AS atom, unit, ts, {weight} AS w, {distinct} AS dv FROM day_events"
    " WHERE event = {event} AND {where}"
)
ATOMS_EMPTY = (
    "SELECT NULL::INTEGER AS atom, NULL::VARCHAR AS unit, NULL::BIGINT AS ts, NULL::DOUBLE AS w,"
    " NULL::VARCHAR AS dv WHERE false"
)
ATOMS_SQL = "CREATE OR REPLACE TEMP TABLE day_atoms AS {union}"
UNITS_SQL = """
COPY (
    WITH rows AS (
        SELECT a.atom, a.unit, a.w, a.ts >= f.exp_ts AS post
        FROM day_atoms a LEFT JOIN day_first f ON a.unit = f.unit
    ),
    sums AS (SELECT unit{sums} FROM rows GROUP BY unit)
    SELECT coalesce(f.unit, s.unit) AS unit, f.exp_ts, f.exp_group, f.exp_groups{columns}
    FROM day_first f FULL OUTER JOIN sums s ON f.unit = s.unit
) TO {target} (FORMAT parquet, COMPRESSION zstd)
"""
DISTINCT_SQL = """
COPY (
    SELECT CAST(atom AS INTEGER) AS atom, unit, dv AS value, ts FROM day_atoms
    WHERE dv IS NOT NULL AND atom IN ({atoms})
) TO {target} (FORMAT parquet, COMPRESSION zstd)
"""
FUNNEL_ROWS = "SELECT {funnel} AS funnel, {step} AS step, unit, ts FROM day_atoms WHERE atom = {atom}"
FUNNEL_EMPTY = (
    "SELECT NULL::INTEGER AS funnel, NULL::INTEGER AS step, NULL::VARCHAR AS unit, NULL::BIGINT AS ts"
    " WHERE false"
)
FUNNEL_SQL = """
COPY (
    SELECT CAST(funnel AS INTEGER) AS funnel, CAST(step AS INTEGER) AS step, unit, ts FROM ({union})
) TO {target} (FORMAT parquet, COMPRESSION zstd)
"""


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
    """A field inside a JSON text column: strings as sent, other values as JSON text."""
    j = f"json_extract({doc}, {path})"
    t = f"json_type({doc}, {path})"
    text = (
        f"(CASE WHEN {t} = 'VARCHAR' THEN json_extract_string({doc}, {path})"
        f" WHEN {t} IS NULL OR {t} = 'NULL' THEN NULL ELSE CAST({j} AS VARCHAR) END)"
    )
    finite = f"TRY_CAST(json_extract_string({doc}, {path}) AS DOUBLE)"
    number = (
        f"(CASE WHEN {t} IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN CAST({j} AS DOUBLE)"
        f" WHEN {t} = 'VARCHAR' AND isfinite({finite}) THEN {finite} END)"
    )
    lower = f"lower(json_extract_string({doc}, {path}))"
    return Field(
        text=text,
        number=number,
        is_null=f"({t} IS NULL OR {t} = 'NULL')",
        true=f"(({t} = 'BOOLEAN' AND CAST({j} AS BOOLEAN)) OR ({t} = 'VARCHAR' AND {lower} = 'true'))",
        false=f"(({t} = 'BOOLEAN' AND NOT CAST({j} AS BOOLEAN)) OR ({t} = 'VARCHAR' AND {lower} = 'false'))",
    )


VALUE_FIELD = Field(
    text="value",
    number="valueNumber",
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
        present = f'json_type("user", {custom}) IS NOT NULL'
        own = json_field('"user"', custom)
        top = json_field('"user"', _path(column))
        pick = lambda a, b: f"(CASE WHEN {present} THEN {a} ELSE {b} END)"  # noqa: E731
        return Field(
            *(pick(getattr(own, f), getattr(top, f)) for f in ("text", "number", "is_null", "true", "false"))
        )
    return json_field('"user"', _path(column))


def criterion_sql(ctype: str, column: str, condition: str, values: tuple[str, ...]) -> str:
    """One criterion (STATS.md): text comparisons; numbers for >, <, >=, <=, and '=' on numbers."""
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
    any_of = " OR ".join(f"contains({f.text}, {literal(v)})" for v in values) or "false"
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
        return f'"{id_type}"'
    custom = literal("$.customIDs." + json.dumps(id_type))
    top = _path(id_type)
    present = f'(json_type("user", {custom}) IS NOT NULL AND json_type("user", {custom}) <> \'NULL\')'
    pick = f"(CASE WHEN {present} THEN {custom} ELSE {top} END)"
    return (
        f"(CASE WHEN json_type(\"user\", {pick}) = 'VARCHAR'"
        f" THEN NULLIF(json_extract_string(\"user\", {pick}), '') END)"
    )


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
        g = json_field("metadata", _path("group"))
        group = f"(CASE WHEN json_type(metadata, {_path('group')}) = 'VARCHAR' THEN {g.text} END)"
    return f"coalesce({ours} = {literal(plan.id)}, false)", group


def _atom_sql(index: int, atom: Atom, plan: EntityPlan, cutoff_ms: int) -> str:
    where = [criterion_sql(*c) for c in atom.criteria]
    if atom.event == plan.exposure_event:
        where.append(f"ts < {cutoff_ms}")  # exposures past the end were read for health only
    if atom.measure == "value":
        weight = "coalesce(valueNumber, 0.0)"
    elif atom.measure == "metadata":
        weight = f"coalesce({json_field('metadata', _path(atom.key or '')).number}, 0.0)"
    else:
        weight = "NULL::DOUBLE"
    if atom.measure == "distinct":
        distinct = json_field("metadata", _path(atom.key)).text if atom.key else "value"
    else:
        distinct = "NULL::VARCHAR"
    return ATOM_SQL.format(
        index=index,
        weight=weight,
        distinct=distinct,
        event=literal(atom.event),
        where=" AND ".join(where) or "true",
    )


def _values(items: list[str]) -> str:
    return ", ".join(literal(i) for i in items) or "NULL"


def aggregate_day(
    plan: EntityPlan, table: DayEvents, cutoff_ms: int, exposure_cutoff_ms: int | None = None
) -> DayAggregate:
    """The day's unit aggregates (events at or after `cutoff_ms` are left out), as Parquet files.

    Exposures up to `exposure_cutoff_ms` (default `cutoff_ms`) are read: those at or after
    `cutoff_ms` (the decision) only count for health, as `afterDecision` (or unknown/disabled).
    """
    con = table.con
    exposure_cutoff_ms = cutoff_ms if exposure_cutoff_ms is None else max(cutoff_ms, exposure_cutoff_ms)
    events_needed = sorted({a.event for a in plan.atoms} | {plan.exposure_event})
    con.execute(
        EVENTS_SQL.format(
            unit=unit_sql(plan.id_type),
            user=', "user"' if needs_user(plan) else "",
            select=table.select,
            events=_values(events_needed),
            cutoff=cutoff_ms,
            exposure=literal(plan.exposure_event),
            exposure_cutoff=exposure_cutoff_ms,
        )
    )
    ours, group = _exposure_sql(plan)
    con.execute(
        EXPOSURES_SQL.format(
            known=_values([g["id"] for g in plan.groups]),
            enabled=_values([g["id"] for g in plan.groups if not g.get("disabled")]),
            decision="NULL" if plan.decision_ms is None else plan.decision_ms,
            cutoff=cutoff_ms,
            group=group,
            exposure=literal(plan.exposure_event),
            ours=ours,
            start=plan.start_ms,
        )
    )
    health = dict.fromkeys(HEALTH_KEYS, 0)
    for status, count in con.execute(HEALTH_SQL).fetchall():
        if status in health:
            health[status] = int(count)
    con.execute(FIRST_SQL.format(sep=literal(GROUP_SEP)))
    atoms = [_atom_sql(i, a, plan, cutoff_ms) for i, a in enumerate(plan.atoms)]
    con.execute(ATOMS_SQL.format(union="\nUNION ALL\n".join(atoms) if atoms else ATOMS_EMPTY))

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
    table.out.mkdir(parents=True, exist_ok=True)
    files = {name: table.out / f"{name}.parquet" for name in PARTS}
    con.execute(
        UNITS_SQL.format(sums="".join(sums), columns="".join(columns), target=literal(str(files["units"])))
    )
    distinct_atoms = [str(i) for i, a in enumerate(plan.atoms) if a.distinct]
    con.execute(
        DISTINCT_SQL.format(atoms=", ".join(distinct_atoms) or "NULL", target=literal(str(files["distinct"])))
    )
    steps = [
        FUNNEL_ROWS.format(funnel=f, step=s, atom=a)
        for f, funnel in enumerate(plan.funnels)
        for s, a in enumerate(funnel.steps)
    ]
    union = "\nUNION ALL\n".join(steps) if steps else FUNNEL_EMPTY
    con.execute(
        FUNNEL_SQL.format(
            union=union,
            target=literal(str(files["funnel"])),
        )
    )
    for name in ("day_events", "day_exposures", "day_first", "day_atoms"):
        con.execute(f"DROP TABLE IF EXISTS {name}")
    return DayAggregate(files, health)


__all__ = ["Atom", "DayAggregate", "DayEvents", "aggregate_day", "criterion_sql"]
