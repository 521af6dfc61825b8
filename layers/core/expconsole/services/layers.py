"""Layers: create, read, list, update, delete, the experiments in a layer, and bucket placement.

A layer splits its units into 1000 buckets, 0 to 999 (the contract's `userBuckets` range).
An experiment placed in it (`layerID`) occupies:

- the buckets its `userBuckets` list, when it lists any: whole numbers, each once;
- otherwise `allocation` percent of the layer, i.e. allocation x 10 buckets (rounded up),
  of whichever buckets are free.

Among a layer's experiments that are not archived, listed buckets never overlap, and all of
their claims together fit in the 1000 buckets (so bucket-less experiments can be given free
ones). `check_placement` enforces this, and that an experiment's `idType` is its layer's,
whenever the experiments service writes an experiment whose `layerID`, `userBuckets`,
`allocation` or `idType` is set or changes (create, update, restart_as_new) and when it
unarchives one: a 400 naming the field, the experiment in the way and the buckets. The check
reads the layer's experiments before the write; two experiments written into one layer at
the same instant can both pass it (the write is not conditional on the other experiments).

Other rules where the contract and the peer are silent: a layer's `idType` cannot change
while experiments of another id type use it (they all share it); deleting a layer that any
experiment (archived ones too: they would point nowhere once unarchived) or holdout still uses
is a 409 naming them. `holdoutIDs` is derived on every read from the holdouts whose
`layerIDs` list the layer, so it cannot disagree with them. `isImplicitLayer` is always false
(this service never creates layers on its own). Parameter names are unique in a layer.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from expconsole import kinds
from expconsole.errors import Conflict, Invalid
from expconsole.models.common import Owner
from expconsole.models.layers import (
    Layer,
    LayerCreate,
    LayerFields,
    LayerListQuery,
    LayerPatch,
    LayerUpdate,
    StoredLayer,
)
from expconsole.models.pagination import Page, page_of
from expconsole.services import entities
from expconsole.services.common import lifecycle
from expconsole.services.common import patch as partial
from expconsole.services.entities import Doc, Presenter
from expconsole.store import dynamo

KIND = kinds.LAYER
BUCKETS = 1000


# --- reading ------------------------------------------------------------------------------------------


def _holdouts_by_layer() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for holdout in dynamo.list_all(kinds.HOLDOUT):
        for layer_id in holdout.get("layerIDs") or []:
            out.setdefault(layer_id, []).append(holdout["id"])
    return out


def present(doc: Doc, holdouts: dict[str, list[str]] | None = None) -> Layer:
    """The layer as the API returns it: stored fields plus `holdoutIDs` and `permalink`."""
    holdouts = _holdouts_by_layer() if holdouts is None else holdouts
    return Layer.model_validate(
        {
            **entities.public(doc),
            "holdoutIDs": holdouts.get(doc["id"], []),
            "permalink": entities.permalink(KIND, doc["id"]),
        }
    )


def get(layer_id: str) -> Layer:
    return present(entities.load(KIND, layer_id))


def list_layers(q: LayerListQuery) -> Page[Layer]:
    holdouts = _holdouts_by_layer()
    return page_of(dynamo.list_all(KIND), page=q.page, limit=q.limit).map(lambda doc: present(doc, holdouts))


def members(layer_id: str) -> list[Doc]:
    """Stored experiments placed in the layer, archived ones included."""
    return [e for e in dynamo.list_all(kinds.EXPERIMENT) if e.get("layerID") == layer_id]


def experiments(layer_id: str, page: int, limit: int, present_experiment: Presenter) -> Page[Doc]:
    """The layer's experiments, each as `present_experiment` shows it (the experiments service's
    `present`, passed in: the experiments service depends on this one, not the other way)."""
    entities.load(KIND, layer_id)  # 404 when the layer does not exist
    now = entities.now_ms()
    shown = [present_experiment(e, now=now) for e in members(layer_id)]
    return page_of(shown, page=page, limit=limit)


# --- bucket placement (hook of expconsole.services.experiments) ------------------------------------------


def claim(doc: Doc) -> int:
    """How many buckets an experiment occupies in its layer."""
    buckets = doc.get("userBuckets") or []
    if buckets:
        return len(buckets)
    allocation = doc.get("allocation", 100)
    return math.ceil(round(allocation * BUCKETS / 100, 6))


def _ranges(buckets: Iterable[int]) -> str:
    """`[1, 2, 3, 7]` → `1-3, 7`."""
    out: list[str] = []
    ordered = sorted(buckets)
    start = prev = ordered[0]
    for b in [*ordered[1:], None]:
        if b is not None and b == prev + 1:
            prev = b
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if b is not None:
            start = prev = b
    return ", ".join(out)


def held_buckets(doc: Doc) -> list[int]:
    """The buckets an experiment holds in its layer: listed, or taken when it started."""
    if doc.get("userBuckets"):
        return sorted({int(b) for b in doc["userBuckets"]})
    return list((doc.get("_state") or {}).get("layerBuckets") or [])


def take_buckets(doc: Doc) -> None:
    """At its start, a layered experiment without `userBuckets` takes `allocation` x 10 free
    buckets (lowest first) and keeps them (`_state.layerBuckets`), so its units never move when
    other experiments of the layer start, end or leave. A read-then-write, like check_placement."""
    if not doc.get("layerID") or doc.get("userBuckets") or held_buckets(doc):
        return
    taken: set[int] = set()
    for other in members(doc["layerID"]):
        if other["id"] != doc["id"] and not lifecycle.is_archived(other):
            taken.update(held_buckets(other))
    free = [b for b in range(BUCKETS) if b not in taken]
    doc["_state"] = {**doc.get("_state", {}), "layerBuckets": free[: claim(doc)]}


def check_placement(doc: Doc) -> None:
    """An experiment (as it would be stored) fits its layer: 400 naming the field otherwise."""
    layer_id = doc.get("layerID")
    if not layer_id:
        return
    layer = dynamo.get(KIND, layer_id)
    if layer is None:
        raise Invalid.field("layerID", f"layer {layer_id!r} does not exist")
    if doc.get("idType") != layer["idType"]:
        raise Invalid.field(
            "idType",
            f"is {doc.get('idType')!r} but layer {layer_id!r} is for {layer['idType']!r}: "
            "an experiment runs on its layer's id type",
        )
    mine: dict[int, int] = {}
    for index, bucket in enumerate(doc.get("userBuckets") or []):
        if bucket != int(bucket):
            raise Invalid.field(
                f"userBuckets[{index}]", f"must be a whole bucket number (0 to 999) in a layer, not {bucket}"
            )
        if int(bucket) in mine:
            raise Invalid.field(
                f"userBuckets[{index}]", f"repeats userBuckets[{mine[int(bucket)]}] ({int(bucket)})"
            )
        mine[int(bucket)] = index
    others = [e for e in members(layer_id) if e["id"] != doc["id"] and not lifecycle.is_archived(e)]
    for other in others:
        overlap = set(mine) & {int(b) for b in other.get("userBuckets") or []}
        if overlap:
            raise Invalid.field(
                "userBuckets",
                f"overlaps experiment {other['id']!r} in layer {layer_id!r} on bucket(s) {_ranges(overlap)}",
            )
    used = sum(claim(e) for e in others)
    need = claim(doc)
    if used + need > BUCKETS:
        users = ", ".join(f"{e['id']!r} ({claim(e)})" for e in others if claim(e))
        raise Invalid.field(
            "userBuckets" if mine else "allocation",
            f"needs {need} of the {BUCKETS} buckets of layer {layer_id!r} but {BUCKETS - used} are free "
            f"(taken by {users})",
        )


# --- writing ----------------------------------------------------------------------------------------------


def _check_parameters(parameters: list[Doc]) -> None:
    seen: dict[str, int] = {}
    for index, parameter in enumerate(parameters):
        name = parameter["name"]
        if name in seen:
            raise Invalid.field(f"parameters[{index}].name", f"repeats parameters[{seen[name]}] ({name!r})")
        seen[name] = index


# Create fields stored as sent; the others are stored as `create` derives them.
_STORED_AS_SENT = frozenset(LayerCreate.model_fields.keys() & LayerFields.model_fields.keys()) - {
    "id",
    "owner",
    "creatorID",
    "creatorEmail",
}


def create(body: LayerCreate) -> Layer:
    layer_id = body.id or entities.id_from_name(body.name)
    if not 3 <= len(layer_id) <= 100:
        raise Invalid.field("id", "the id derived from the name must be 3 to 100 characters; send an id")
    data = body.model_dump(mode="json")
    _check_parameters(data["parameters"])
    layer = StoredLayer(
        **{field: data[field] for field in _STORED_AS_SENT},
        id=layer_id,
        isImplicitLayer=False,
        owner=Owner.model_validate(entities.owner_for(data["owner"])),
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
    )
    return present(entities.insert(KIND, layer_id, layer.doc()))


def _update(layer_id: str, body: LayerUpdate | LayerPatch) -> Layer:
    sent = body.changes()
    sent.pop("version", None)
    if "parameters" in sent:
        _check_parameters(sent["parameters"])
    if "owner" in sent:
        sent["owner"] = entities.owner_for(sent["owner"])

    def change(layer: StoredLayer) -> None:
        if "idType" in sent and sent["idType"] != layer.idType:
            users = [e["id"] for e in members(layer_id) if e.get("idType") != sent["idType"]]
            if users:
                raise Invalid.field(
                    "idType",
                    f"cannot change to {sent['idType']!r}: experiment(s) {_names(users)} use this layer "
                    "with another id type",
                )
        layer.set_fields(sent)

    return present(entities.update_stored(KIND, layer_id, StoredLayer, change, body.version))


def full_update(layer_id: str, body: LayerUpdate) -> Layer:
    return _update(layer_id, body)


def patch(layer_id: str, body: LayerPatch) -> Layer:
    stored = partial.unchanged(KIND, layer_id, partial.changes_of(body.changes()), body.version)
    if stored is not None:
        return present(stored)
    return _update(layer_id, body)


def _names(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:10])
    return shown + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def delete(layer_id: str) -> None:
    doc = entities.load(KIND, layer_id)
    users = [e["id"] for e in members(layer_id)]
    if users:
        raise Conflict(
            f"Layer {layer_id!r} is used by experiment(s) {_names(users)}; move them out of the layer "
            "(layerID) or delete them first."
        )
    holdouts = _holdouts_by_layer().get(layer_id, [])
    if holdouts:
        raise Conflict(
            f"Layer {layer_id!r} is held out by holdout(s) {_names(holdouts)}; remove it from their "
            "layerIDs first."
        )
    entities.remove(KIND, layer_id, doc)
