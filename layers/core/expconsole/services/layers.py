"""Layers: create, read, list, update, delete, the experiments in a layer, and bucket placement.

A layer splits its units into 1000 buckets, 0 to 999 (the contract's `userBuckets` range).
An experiment placed in it (`layerID`) occupies:

- the buckets its `userBuckets` list, when it lists any: whole numbers, each once;
- otherwise `allocation` percent of the layer, i.e. allocation x 10 buckets (rounded up),
  of whichever buckets are free.

Among a layer's experiments that are not archived, listed buckets never overlap, and all of
their claims together fit in the 1000 buckets (so bucket-less experiments can be given free
ones). `layer_buckets.check_placement` enforces this, and that an experiment's `idType` is its layer's,
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

from expconsole import kinds
from expconsole.errors import Conflict, Invalid
from expconsole.models.layers import (
    Layer,
    LayerCreate,
    LayerFields,
    LayerListQuery,
    LayerParameter,
    LayerPatch,
    LayerUpdate,
    StoredLayer,
)
from expconsole.models.pagination import Page, page_of
from expconsole.services import entities
from expconsole.services.common import patch as partial
from expconsole.services.entities import Doc, Presenter
from expconsole.services.layer_buckets import members
from expconsole.store import dynamo

KIND = kinds.LAYER


# --- reading ------------------------------------------------------------------------------------------


def _holdouts_by_layer() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for holdout in dynamo.list_all(kinds.HOLDOUT):
        for layer_id in holdout.get("layerIDs") or []:
            out.setdefault(layer_id, []).append(holdout["id"])
    return out


def present(layer: StoredLayer, holdouts: dict[str, list[str]] | None = None) -> Layer:
    """The layer as the API returns it: stored fields plus `holdoutIDs` and `permalink`."""
    holdouts = _holdouts_by_layer() if holdouts is None else holdouts
    return Layer.model_validate(
        {
            **entities.public(layer.doc()),
            "holdoutIDs": holdouts.get(layer.id, []),
            "permalink": entities.permalink(KIND, layer.id),
        }
    )


def get(layer_id: str) -> Layer:
    return present(entities.load(StoredLayer, layer_id))


def list_layers(q: LayerListQuery) -> Page[Layer]:
    holdouts = _holdouts_by_layer()
    return page_of(dynamo.list_all(KIND), page=q.page, limit=q.limit).map(
        lambda doc: present(StoredLayer.read(doc), holdouts)
    )


def experiments(layer_id: str, page: int, limit: int, present_experiment: Presenter) -> Page[Doc]:
    """The layer's experiments, each as `present_experiment` shows it (the experiments service's
    `present`, passed in: the experiments service depends on this one, not the other way)."""
    entities.load(StoredLayer, layer_id)  # 404 when the layer does not exist
    now = entities.now_ms()
    shown = [present_experiment(e, now=now) for e in members(layer_id)]
    return page_of(shown, page=page, limit=limit)


# --- writing ----------------------------------------------------------------------------------------------


def _check_parameters(parameters: list[LayerParameter]) -> None:
    seen: dict[str, int] = {}
    for index, parameter in enumerate(parameters):
        name = parameter.name
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
    _check_parameters(body.parameters)
    layer = StoredLayer(
        **body.model_dump(mode="json", include=set(_STORED_AS_SENT)),
        id=layer_id,
        isImplicitLayer=False,
        owner=entities.owner(body.owner),
        **entities.bookkeeping(body.creatorID, body.creatorEmail),
    )
    return present(entities.insert(layer))


# Update fields stored as sent (`owner` is stored as `entities.owner` makes it).
_SET_AS_SENT = frozenset(LayerPatch.model_fields) - {"owner", "version"}


def _update(layer_id: str, body: LayerUpdate | LayerPatch) -> Layer:
    if body.parameters is not None:
        _check_parameters(body.parameters)
    layer = entities.current(StoredLayer, layer_id, body.version)
    if body.idType is not None and body.idType != layer.idType:
        users = [e["id"] for e in members(layer_id) if e.get("idType") != body.idType]
        if users:
            raise Invalid.field(
                "idType",
                f"cannot change to {body.idType!r}: experiment(s) {_names(users)} use this layer "
                "with another id type",
            )
    layer.set_sent(body, _SET_AS_SENT)
    if body.owner is not None:
        layer.owner = entities.owner(body.owner)
    return present(entities.replace(layer))


def full_update(layer_id: str, body: LayerUpdate) -> Layer:
    return _update(layer_id, body)


def patch(layer_id: str, body: LayerPatch) -> Layer:
    if not partial.asks_change(body):
        return present(entities.current(StoredLayer, layer_id, body.version))
    return _update(layer_id, body)


def _names(ids: list[str]) -> str:
    shown = ", ".join(repr(i) for i in ids[:10])
    return shown + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")


def delete(layer_id: str) -> None:
    layer = entities.load(StoredLayer, layer_id)
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
    entities.remove(layer)
