"""The stored experiment: `StoredExperiment`, an experiment as the table holds it, and its `_state`.

Apart from models/experiments.py (which declares the fields, `ExperimentFields`) so that the
experiments function's import does not create it: only a write needs it (services.experiments
imports it where it writes), and creating a model of an experiment's ~100 fields costs some 17 M
instructions (2 % of the baseline import), which a cold start serving a read need not pay.
"""

from collections.abc import Mapping, Sequence
from typing import Any, Self

from pydantic import Field, PrivateAttr

from expconsole.models.experiments import ExperimentFields, ExperimentStatus
from expconsole.models.stored import StoredModel


def _in_order(values: dict[str, Any], order: Sequence[str]) -> dict[str, Any]:
    """`values` with the keys of `order` where they were, then the others as they come: how a dict
    read in that order and changed in place (values replaced, keys popped, keys added) reads."""
    out = {key: values[key] for key in order if key in values}
    out.update(values)
    return out


class _KeptOrder(StoredModel):
    """A stored model whose item keeps its keys in the order they were read: an experiment's keys
    follow its history (a key set after the create comes after `version`, one popped and set again
    comes last), so writing one back in the declared order would move them. Keys set since are
    written after them, in the declared order, as `dict.update` and `dict.pop` left them."""

    _read_order: tuple[str, ...] = PrivateAttr(default=())

    @classmethod
    def read(cls, doc: Mapping[str, Any]) -> Self:
        stored = super().read(doc)
        stored._read_order = tuple(doc)
        return stored

    def unset(self, name: str) -> None:
        """Leave field `name` out of the item, as popping its key would (set again, it comes last)."""
        field = type(self).model_fields[name]
        self.__dict__[name] = field.get_default(call_default_factory=True, validated_data={})
        self.__pydantic_fields_set__.discard(name)
        key = field.alias or name
        self._read_order = tuple(k for k in self._read_order if k != key)

    def doc(self) -> dict[str, Any]:
        return _in_order(super().doc(), self._read_order)


class ExperimentState(_KeptOrder):
    """An experiment's `_state`: the state archive left (`unarchive` returns to it), the analysis
    start a warehouse start stores, and the layer buckets it took at its start (written by
    services.layer_buckets.take_buckets). An item may hold only some of these keys, in any order,
    or others: they are kept."""

    archivedFrom: ExperimentStatus | None = None
    archiveReason: str | None = None
    archivedTime: int | None = None
    analysisStartTime: str | None = None
    layerBuckets: list[int] | None = None


class StoredExperiment(_KeptOrder, ExperimentFields):
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
            out["_state"] = _in_order(out["_state"], self.state._read_order)
        return out
