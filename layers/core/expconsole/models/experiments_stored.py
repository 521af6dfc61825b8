"""The stored experiment: `StoredExperiment`, an experiment as the table holds it, and its `_state`.

Apart from models/experiments.py (which declares the fields, `ExperimentFields`) so that the
experiments function's import does not create it: only a write needs it (services.experiments
imports it where it writes), and creating a model of an experiment's ~100 fields has a cost
(docs/performance.md, 'Cold start') which a cold start serving a read need not pay.
"""

from collections.abc import Mapping
from typing import Any, Self

from pydantic import Field

from expconsole.models.experiments import ExperimentFields, ExperimentStatus
from expconsole.models.stored import KeptOrder, in_order


class ExperimentState(KeptOrder):
    """An experiment's `_state`: the state archive left (`unarchive` returns to it), the analysis
    start a warehouse start stores, and the layer buckets it took at its start (written by
    services.layer_buckets.take_buckets). An item may hold only some of these keys, in any order,
    or others: they are kept."""

    archivedFrom: ExperimentStatus | None = None
    archiveReason: str | None = None
    archivedTime: int | None = None
    analysisStartTime: str | None = None
    layerBuckets: list[int] | None = None


class StoredExperiment(KeptOrder, ExperimentFields):
    """An experiment as the table holds it: its fields, in its item's order, plus internal state,
    never answered as such: `_state` (ExperimentState) and `_health`, the health checks pulse
    stores (services.pulse.run, `dynamo.set_internal`; its document, kept as pulse wrote it).
    An item without them reads with the defaults and is written back without them unless a
    change sets them; keys of other modules are kept."""

    state: ExperimentState = Field(default_factory=ExperimentState, alias="_state")
    health: dict[str, Any] | None = Field(None, alias="_health")

    @classmethod
    def read(cls, doc: Mapping[str, Any]) -> Self:
        stored = super().read(doc)
        state = doc.get("_state")
        if isinstance(state, Mapping):
            stored.state._read_order = tuple(state)
        return stored

    def doc(self) -> dict[str, Any]:
        out = super().doc()
        if isinstance(out.get("_state"), dict):
            out["_state"] = in_order(out["_state"], self.state._read_order)
        return out
