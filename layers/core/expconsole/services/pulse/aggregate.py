"""Per-day unit aggregates of one experiment or holdout: the day's events reduced to units.

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
"""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from expconsole.services.pulse.daydata import number_of
from expconsole.services.pulse.plan import Atom, EntityPlan

NO_EXPOSURE = np.iinfo(np.int64).max
GROUP_SEP = "\x1f"
HEALTH_KEYS = ("valid", "unknownGroup", "disabledGroup", "afterDecision")


@dataclasses.dataclass
class DayAggregate:
    units: pa.Table
    distinct: pa.Table
    funnel: pa.Table
    health: dict[str, int]

    def to_parquet(self) -> dict[str, bytes]:
        out = {}
        for name in ("units", "distinct", "funnel"):
            sink = io.BytesIO()
            pq.write_table(getattr(self, name), sink, compression="zstd")
            out[name] = sink.getvalue()
        return out

    @classmethod
    def from_parquet(cls, parts: dict[str, bytes], health: dict[str, int]) -> DayAggregate:
        tables = {name: pq.read_table(io.BytesIO(parts[name])) for name in ("units", "distinct", "funnel")}
        return cls(tables["units"], tables["distinct"], tables["funnel"], health)


DISTINCT_SCHEMA = pa.schema(
    [("atom", pa.int32()), ("unit", pa.string()), ("value", pa.string()), ("ts", pa.int64())]
)
FUNNEL_SCHEMA = pa.schema(
    [("funnel", pa.int32()), ("step", pa.int32()), ("unit", pa.string()), ("ts", pa.int64())]
)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _truthy(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def matches(condition: str, values: tuple[str, ...], actual: Any) -> bool:
    """One criterion on one field value (text comparisons; numbers for >, <, >=, <=)."""
    if condition == "is_null":
        return actual is None
    if condition == "non_null":
        return actual is not None
    if condition == "is_true":
        return _truthy(actual) is True
    if condition == "is_false":
        return _truthy(actual) is False
    text = _text(actual)
    if condition == "in":
        return text is not None and text in values
    if condition == "not_in":
        return text is None or text not in values
    if condition == "contains":
        return text is not None and any(v in text for v in values)
    if condition == "not_contains":
        return text is None or not any(v in text for v in values)
    if condition == "=":
        if text is None:
            return False
        if text == values[0]:
            return True
        a, b = number_of(actual), number_of(values[0])
        return a is not None and b is not None and a == b
    number, bound = number_of(actual), number_of(values[0])
    if number is None or bound is None:
        return False
    return {">": number > bound, "<": number < bound, ">=": number >= bound, "<=": number <= bound}[condition]


class _Row:
    """Lazily parsed JSON fields of one event row (criteria, metadata measures, custom ids)."""

    __slots__ = ("_m", "_u", "metadata_text", "user_text", "value")

    def __init__(self, metadata_text: str | None, user_text: str | None, value: Any) -> None:
        self.metadata_text, self.user_text, self.value = metadata_text, user_text, value
        self._m: dict[str, Any] | None = None
        self._u: dict[str, Any] | None = None

    @property
    def metadata(self) -> dict[str, Any]:
        if self._m is None:
            self._m = json.loads(self.metadata_text) if self.metadata_text else {}
        return self._m

    @property
    def user(self) -> dict[str, Any]:
        if self._u is None:
            self._u = json.loads(self.user_text) if self.user_text else {}
        return self._u

    def field(self, ctype: str, column: str) -> Any:
        if ctype == "value" or column.startswith("!service_"):
            return self.value
        if ctype == "metadata":
            return self.metadata.get(column)
        if ctype == "user_custom":
            custom = self.user.get("custom")
            if isinstance(custom, dict) and column in custom:
                return custom[column]
        return self.user.get(column)


def needed_columns(plan: EntityPlan) -> list[str]:
    """The day columns an aggregate reads: the user JSON only for custom ids or user criteria."""
    columns = ["event", "timestamp", "userID", "stableID", "value", "valueNumber", "metadata"]
    user_criteria = any(c[0] in ("user", "user_custom") for a in plan.atoms for c in a.criteria)
    if plan.id_type not in ("userID", "stableID") or user_criteria:
        columns.append("user")
    return columns


def unit_column(table: pa.Table, id_type: str) -> pa.Array:
    """The unit id of each event for the plan's id type (null when the event has none)."""
    if id_type in ("userID", "stableID"):
        return table[id_type].combine_chunks()
    out = []
    for text in table["user"].to_pylist():
        user = json.loads(text) if text else {}
        custom = user.get("customIDs")
        value = custom.get(id_type) if isinstance(custom, dict) else None
        value = value if value is not None else user.get(id_type)
        out.append(value if isinstance(value, str) and value else None)
    return pa.array(out, pa.string())


def _exposure_group(plan: EntityPlan, metadata: dict[str, Any]) -> tuple[bool, str | None]:
    """(is this entity's exposure, group id or None)."""
    if plan.exposure_event.endswith("holdout_exposure"):
        if str(metadata.get("holdout")) != plan.id:
            return False, None
        held = _truthy(metadata.get("heldOut"))
        return True, None if held is None else ("control" if held else "test")
    if str(metadata.get("experiment")) != plan.id:
        return False, None
    group = metadata.get("group")
    return True, group if isinstance(group, str) else None


def aggregate_day(
    plan: EntityPlan, table: pa.Table, cutoff_ms: int, exposure_cutoff_ms: int | None = None
) -> DayAggregate:
    """The day's unit aggregates (events at or after `cutoff_ms` are left out).

    Exposures up to `exposure_cutoff_ms` (default `cutoff_ms`) are read: those at or after
    `cutoff_ms` (the decision) only count for health, as `afterDecision` (or unknown/disabled).
    """
    exposure_cutoff_ms = cutoff_ms if exposure_cutoff_ms is None else max(cutoff_ms, exposure_cutoff_ms)
    events_needed = {a.event for a in plan.atoms} | {plan.exposure_event}
    timestamps = table["timestamp"]
    keep = pc.and_(
        pc.is_in(table["event"], value_set=pa.array(sorted(events_needed), pa.string())),
        pc.or_(
            pc.less(timestamps, pa.scalar(cutoff_ms, pa.int64())),
            pc.and_(
                pc.equal(table["event"], plan.exposure_event),
                pc.less(timestamps, pa.scalar(exposure_cutoff_ms, pa.int64())),
            ),
        ),
    )
    table = table.filter(keep)
    units = unit_column(table, plan.id_type)
    has_unit = pc.is_valid(units)
    table, units = table.filter(has_unit), units.filter(has_unit)
    encoded = (
        pc.dictionary_encode(units).combine_chunks()
        if isinstance(units, pa.ChunkedArray)
        else pc.dictionary_encode(units)
    )
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    dictionary = encoded.dictionary
    n_units = len(dictionary)
    ts = table["timestamp"].to_numpy()
    event = table["event"]
    health = dict.fromkeys(HEALTH_KEYS, 0)

    # Exposures of the day: first valid one per unit, and every valid group seen.
    exp_ts = np.full(n_units, NO_EXPOSURE, dtype=np.int64)
    exp_group: list[str | None] = [None] * n_units
    groups_seen: dict[int, set[str]] = {}
    enabled = {g["id"] for g in plan.groups if not g.get("disabled")}
    known = {g["id"] for g in plan.groups}
    exposure_rows = np.flatnonzero(pc.equal(event, plan.exposure_event).to_numpy(zero_copy_only=False))
    if exposure_rows.size:
        metadata = table["metadata"].take(pa.array(exposure_rows)).to_pylist()
        for row, text in zip(exposure_rows.tolist(), metadata, strict=True):
            ours, group = _exposure_group(plan, json.loads(text) if text else {})
            t = int(ts[row])
            if not ours or t < plan.start_ms:
                continue
            if group is None or group not in known:
                health["unknownGroup"] += 1
            elif group not in enabled:
                health["disabledGroup"] += 1
            elif plan.decision_ms is not None and t >= plan.decision_ms:
                health["afterDecision"] += 1
            elif t >= cutoff_ms:
                continue  # past the analysis end without a decision: not an exposure of the analysis
            else:
                health["valid"] += 1
                code = int(codes[row])
                groups_seen.setdefault(code, set()).add(group)
                if t < exp_ts[code]:
                    exp_ts[code], exp_group[code] = t, group

    columns: dict[str, Any] = {}
    distinct_parts: list[pa.Table] = []
    row_cache: dict[int, _Row] = {}
    metadata_col = table["metadata"]
    user_col = table["user"] if "user" in table.column_names else None
    value_col = table["value"]
    value_number = table["valueNumber"].fill_null(0.0).to_numpy()

    def row_of(i: int) -> _Row:
        row = row_cache.get(i)
        if row is None:
            row = row_cache[i] = _Row(
                metadata_col[i].as_py(),
                user_col[i].as_py() if user_col is not None else None,
                _value_of(value_col[i].as_py()),
            )
        return row

    atom_rows: list[np.ndarray] = []
    for index, atom in enumerate(plan.atoms):
        rows = np.flatnonzero(pc.equal(event, atom.event).to_numpy(zero_copy_only=False))
        if atom.event == plan.exposure_event:
            rows = rows[ts[rows] < cutoff_ms]  # exposures past the end were read for health only
        if atom.criteria and rows.size:
            rows = np.array(
                [
                    i
                    for i in rows.tolist()
                    if all(matches(c, v, row_of(i).field(t, col)) for t, col, c, v in atom.criteria)
                ],
                dtype=np.int64,
            )
        atom_rows.append(rows)
        g = codes[rows]
        post = ts[rows] >= exp_ts[g]
        if atom.measure == "distinct":
            values = [
                _text(row_of(i).metadata.get(atom.key)) if atom.key else value_col[i].as_py()
                for i in rows.tolist()
            ]
            present = np.array([v is not None for v in values], dtype=bool)
            distinct_parts.append(
                pa.table(
                    {
                        "atom": pa.array(np.full(int(present.sum()), index, dtype=np.int32)),
                        "unit": dictionary.take(pa.array(g[present])),
                        "value": pa.array([v for v in values if v is not None], pa.string()),
                        "ts": pa.array(ts[rows][present]),
                    },
                    schema=DISTINCT_SCHEMA,
                )
            )
            weights = None
        elif atom.measure == "value":
            weights = value_number[rows]
        elif atom.measure == "metadata":
            weights = np.array(
                [number_of(row_of(i).metadata.get(atom.key)) or 0.0 for i in rows.tolist()], dtype=float
            )
        else:
            weights = None
        columns[f"n{index}"] = np.bincount(g, minlength=n_units).astype(float)
        columns[f"np{index}"] = np.bincount(g[post], minlength=n_units).astype(float)
        if weights is not None:
            columns[f"s{index}"] = np.bincount(g, weights=weights, minlength=n_units)
            columns[f"sp{index}"] = np.bincount(g[post], weights=weights[post], minlength=n_units)

    funnel_parts = []
    for f_index, funnel in enumerate(plan.funnels):
        for step, atom_index in enumerate(funnel.steps):
            rows = atom_rows[atom_index]
            funnel_parts.append(
                pa.table(
                    {
                        "funnel": pa.array(np.full(rows.size, f_index, dtype=np.int32)),
                        "step": pa.array(np.full(rows.size, step, dtype=np.int32)),
                        "unit": dictionary.take(pa.array(codes[rows])),
                        "ts": pa.array(ts[rows]),
                    },
                    schema=FUNNEL_SCHEMA,
                )
            )

    # Keep the units that carry something: an exposure or any matching event.
    relevant = exp_ts != NO_EXPOSURE
    for name, values in columns.items():
        if name.startswith("n") and not name.startswith("np"):
            relevant |= values > 0
    keep_codes = np.flatnonzero(relevant)
    exposed = exp_ts[keep_codes] != NO_EXPOSURE
    unit_table = {
        "unit": dictionary.take(pa.array(keep_codes)),
        "exp_ts": pa.array(exp_ts[keep_codes], mask=~exposed),
        "exp_group": pa.array([exp_group[c] for c in keep_codes.tolist()], pa.string()),
        "exp_groups": pa.array(
            [
                GROUP_SEP.join(sorted(groups_seen[c])) if c in groups_seen else None
                for c in keep_codes.tolist()
            ],
            pa.string(),
        ),
    }
    for name, values in columns.items():
        unit_table[name] = pa.array(values[keep_codes])
    return DayAggregate(
        units=pa.table(unit_table),
        distinct=pa.concat_tables(distinct_parts) if distinct_parts else DISTINCT_SCHEMA.empty_table(),
        funnel=pa.concat_tables(funnel_parts) if funnel_parts else FUNNEL_SCHEMA.empty_table(),
        health=health,
    )


def _is_json_number(raw: Any) -> bool:
    """Stored value text that was a JSON number (strings stay strings for criteria)."""
    return isinstance(raw, str) and raw[:1] in "-0123456789" and number_of(raw) is not None


def _value_of(raw: Any) -> Any:
    """The event value for criteria: a JSON number as the number sent (an int stays an int, so
    `in ["10"]` matches the value 10, as its text "10" does), anything else as stored."""
    if _is_json_number(raw):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    return raw


__all__ = ["Atom", "DayAggregate", "aggregate_day", "matches"]
