"""What a pulse run computes for one experiment or holdout: its units, groups and metric plans.

A metric resolves to *atoms*: an event name, the criteria its occurrences must meet and what is
measured on them (a count, the event value, a metadata key, or distinct values). Atoms are what
the day aggregates store per unit, so a metric's unit value is a small function of its atoms'
per-unit sums (`analyse.unit_values`). Composite and ratio metrics resolve through their
component metrics; funnel steps resolve to one atom each.

The plan's `fingerprint` covers everything a day aggregate depends on (atoms, unit id type,
exposure rules); a stored day aggregate with another fingerprint is recomputed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from expconsole import kinds
from expconsole.errors import Invalid
from expconsole.services import experiments, metrics

EXPERIMENT_EXPOSURE = "console::experiment_exposure"
HOLDOUT_EXPOSURE = "console::holdout_exposure"
HOLDOUT_CONTROL = "control"
HOLDOUT_TEST = "test"
DAY_MS = 86_400_000
PRE_DAYS = 7
# Types whose unit values are winsorized (docs/statistics.md, 'Winsorization': sum and count metrics).
WINSORIZED = frozenset({"sum", "event_count", "event_count_custom", "composite_sum"})
ROLLUPS = (-1, 1, 7)


@dataclasses.dataclass(frozen=True)
class Atom:
    """One event-level filter and measure. `measure`: count, value, metadata, distinct."""

    event: str
    criteria: tuple[tuple[str, str, str, tuple[str, ...]], ...] = ()
    measure: str = "count"
    key: str | None = None  # the metadata key summed or counted distinct

    @property
    def distinct(self) -> bool:
        return self.measure == "distinct"


@dataclasses.dataclass
class MetricPlan:
    """How one metric's unit values are made. `parts` are (atom index, role) pairs."""

    id: str
    name: str
    type: str
    directionality: str
    kind: str  # "mean" or "ratio" (stored statistic kind)
    atoms: list[int] = dataclasses.field(default_factory=list)
    components: list[MetricPlan] = dataclasses.field(default_factory=list)
    funnel: int | None = None  # index into EntityPlan.funnels
    missing: str | None = None  # why the metric cannot be computed


@dataclasses.dataclass
class Funnel:
    steps: list[int]  # atom indexes, in order
    mode: str  # "users" or "events"


@dataclasses.dataclass
class EntityPlan:
    kind: str  # kinds.EXPERIMENT or kinds.HOLDOUT
    id: str
    name: str
    id_type: str
    start_ms: int
    end_ms: int | None  # events at or after this are not analysed (decision, end)
    decision_ms: int | None  # exposures at or after this are counted for health only
    exposure_event: str
    groups: list[dict[str, Any]]  # [{id, name, size, disabled}]
    control_id: str | None
    rollup: int
    metrics: list[MetricPlan]
    atoms: list[Atom]
    funnels: list[Funnel]
    schedule_hour: int | None = None
    schedule_days: list[int] | None = None

    @property
    def analysed_groups(self) -> list[str]:
        return [g["id"] for g in self.groups if not g.get("disabled")]

    def fingerprint(self) -> str:
        spec = {
            "v": 1,
            "idType": self.id_type,
            "start": self.start_ms,
            "decision": self.decision_ms,
            "exposure": self.exposure_event,
            "groups": [[g["id"], bool(g.get("disabled"))] for g in self.groups],
            "atoms": [dataclasses.astuple(a) for a in self.atoms],
            "funnels": [[f.steps, f.mode] for f in self.funnels],
        }
        return hashlib.sha256(json.dumps(spec, sort_keys=True, default=list).encode()).hexdigest()[:32]


class _Builder:
    def __init__(self) -> None:
        self.atoms: list[Atom] = []
        self.funnels: list[Funnel] = []
        self._index: dict[Atom, int] = {}
        self._docs: dict[str, dict[str, Any] | None] = {}

    def atom(self, atom: Atom) -> int:
        if atom not in self._index:
            self._index[atom] = len(self.atoms)
            self.atoms.append(atom)
        return self._index[atom]

    def doc(self, mid: str) -> dict[str, Any] | None:
        if mid not in self._docs:
            self._docs[mid] = metrics.get_or_builtin(mid)
        return self._docs[mid]

    def metric(self, mid: str, depth: int = 0) -> MetricPlan:
        name, _, mtype = mid.partition("::")
        doc = self.doc(mid)
        plan = MetricPlan(
            id=mid,
            name=name,
            type=mtype,
            directionality=(doc or {}).get("directionality", "increase"),
            kind="mean",
        )
        if doc is None:
            plan.missing = "metric not found"
            return plan
        if depth > 8:
            plan.missing = "metric components nest too deep"
            return plan
        mtype = doc["type"]
        events = doc.get("metricEvents") or []
        if mtype in ("event_count", "event_dau"):
            plan.atoms = [self.atom(Atom(doc["name"]))]
        elif mtype in ("event_count_custom", "event_user", "sum"):
            for ev in events:
                etype = ev.get("type") or ("value" if mtype == "sum" else "count")
                measure = {"count": "count", "count_distinct": "distinct", "value": "value"}.get(etype, etype)
                if mtype == "event_user":
                    measure = "count"
                plan.atoms.append(self.atom(Atom(ev["name"], _criteria(ev), measure, ev.get("metadataKey"))))
        elif mtype in ("ratio", "composite_sum"):
            for ref in doc.get("metricComponentMetrics") or []:
                plan.components.append(self.metric(f"{ref['name']}::{ref['type']}", depth + 1))
            if mtype == "ratio":
                plan.kind = "ratio"
            missing = [c.id for c in plan.components if c.missing]
            if missing:
                plan.missing = f"component metrics missing: {', '.join(missing)}"
        elif mtype == "funnel":
            steps = [self._funnel_step(step, depth) for step in doc.get("funnelEventList") or []]
            mode = doc.get("funnelCountDistinct") or "users"
            self.funnels.append(Funnel(steps, mode))
            plan.funnel = len(self.funnels) - 1
            plan.kind = "ratio" if mode == "events" else "mean"
        else:
            plan.missing = f"metric type {mtype!r} is not computed from events"
        return plan

    def _funnel_step(self, step: dict[str, Any], depth: int) -> int:
        """A step names an event (event_count/event_dau) or a custom metric (event_user/_custom)."""
        if step["type"] in ("event_count", "event_dau"):
            return self.atom(Atom(step["name"]))
        doc = self.doc(f"{step['name']}::{step['type']}")
        events = (doc or {}).get("metricEvents") or []
        if not events:
            return self.atom(Atom(step["name"]))
        # A step matches an occurrence of the metric's first event that meets its criteria.
        ev = events[0]
        return self.atom(Atom(ev["name"], _criteria(ev)))


def _criteria(ev: dict[str, Any]) -> tuple[tuple[str, str, str, tuple[str, ...]], ...]:
    return tuple(
        (c.get("type", "value"), c.get("column") or "", c["condition"], tuple(c.get("values") or ()))
        for c in ev.get("criteria") or []
    )


def experiment_metric_ids(doc: dict[str, Any]) -> list[str]:
    """The experiment's metric ids (`<name>::<type>`): primary, then secondary, then other."""
    lists = ("primaryMetrics", "secondaryMetrics", "otherMetrics")
    return _metric_ids([ref for field in lists for ref in doc.get(field) or []])


def _metric_ids(refs: list[Any]) -> list[str]:
    out = []
    for ref in refs or []:
        mid = f"{ref['name']}::{ref['type']}" if isinstance(ref, dict) else str(ref)
        if mid not in out:
            out.append(mid)
    return out


def experiment_plan(doc: dict[str, Any], now: int) -> EntityPlan:
    """The plan of an experiment (as `experiments.effective` sees it); 400 if it has not started."""
    doc = experiments.effective(doc, now)
    start = doc.get("startTime")
    if start is None:
        raise Invalid.field("id", "the experiment has not started: start it before loading pulse")
    decision = doc.get("decisionTime") if doc.get("status") in experiments.DECIDED else None
    end = doc.get("endTime") or decision
    builder = _Builder()
    ids = experiment_metric_ids(doc)
    plans = [builder.metric(mid) for mid in ids]
    rollup = doc.get("defaultRollupWindow")
    return EntityPlan(
        kind=kinds.EXPERIMENT,
        id=doc["id"],
        name=doc.get("name", doc["id"]),
        id_type=doc.get("idType") or "userID",
        start_ms=int(start),
        end_ms=int(end) if end else None,
        decision_ms=int(decision) if decision else None,
        exposure_event=EXPERIMENT_EXPOSURE,
        groups=[
            {
                "id": g["id"],
                "name": g.get("name", g["id"]),
                "size": g.get("size", 0),
                "disabled": g.get("disabled"),
            }
            for g in doc.get("groups") or []
        ],
        control_id=doc.get("controlGroupID") or ((doc.get("groups") or [{}])[0].get("id")),
        rollup=rollup if rollup in ROLLUPS else -1,
        metrics=plans,
        atoms=builder.atoms,
        funnels=builder.funnels,
        schedule_hour=doc.get("scheduledReloadHour"),
        schedule_days=doc.get("scheduledReloadDays"),
    )


def holdout_plan(doc: dict[str, Any]) -> EntityPlan:
    """A holdout: held-out units are the control group, exposed units the test group."""
    builder = _Builder()
    plans = [builder.metric(mid) for mid in _metric_ids(doc.get("monitoringMetrics") or [])]
    held = float(doc.get("passPercentage") or 0)
    return EntityPlan(
        kind=kinds.HOLDOUT,
        id=doc["id"],
        name=doc.get("name", doc["id"]),
        id_type=doc.get("idType") or "userID",
        start_ms=int(doc.get("createdTime") or 0),
        end_ms=None,
        decision_ms=None,
        exposure_event=HOLDOUT_EXPOSURE,
        groups=[
            {"id": HOLDOUT_CONTROL, "name": "Held out", "size": held, "disabled": False},
            {"id": HOLDOUT_TEST, "name": "Exposed", "size": 100 - held, "disabled": False},
        ],
        control_id=HOLDOUT_CONTROL,
        rollup=-1,
        metrics=plans,
        atoms=builder.atoms,
        funnels=builder.funnels,
    )
