"""Layers: /console/v1/layers. Parse, call the service, wrap in the envelope."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Query

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.api.envelope import paged
from expconsole.api.pagination import PageQuery
from expconsole.models.common import Message
from expconsole.models.layers import (
    Layer,
    LayerCreate,
    LayerEnvelope,
    LayerListEnvelope,
    LayerListQuery,
    LayerPatch,
    LayerUpdate,
)
from expconsole.models.list_envelopes import AnyListEnvelope
from expconsole.services import layers

router = new_router()
BASE = "/console/v1/layers"
ONE = f"{BASE}/<id>"
TAGS = ["Layers"]


def _updated(layer: Layer) -> LayerEnvelope:
    return LayerEnvelope(message="Layer updated successfully.", data=layer)


@router.post(
    BASE, tags=TAGS, summary="Create a layer", responses=responses(201, LayerEnvelope, "Created", 409)
)
def create_layer(body: LayerCreate) -> tuple[LayerEnvelope, int]:
    return LayerEnvelope(message="Layer created successfully.", data=layers.create(body)), 201


@router.get(
    BASE, tags=TAGS, summary="List layers", responses=responses(200, LayerListEnvelope, "A page of layers")
)
def list_layers(query: Annotated[LayerListQuery, Query()]) -> LayerListEnvelope:
    page = layers.list_layers(query)
    return LayerListEnvelope.model_validate(paged("Layers listed successfully.", page, router))


@router.get(ONE, tags=TAGS, summary="Read a layer", responses=responses(200, LayerEnvelope, "The layer", 404))
def get_layer(id: str) -> LayerEnvelope:
    return LayerEnvelope(message="Layer read successfully.", data=layers.get(id))


@router.post(
    ONE,
    tags=TAGS,
    summary="Fully update a layer",
    responses=responses(200, LayerEnvelope, "Updated", 404, 409),
)
def update_layer(id: str, body: LayerUpdate) -> LayerEnvelope:
    return _updated(layers.full_update(id, body))


@router.patch(
    ONE,
    tags=TAGS,
    summary="Partially update a layer",
    responses=responses(200, LayerEnvelope, "Updated", 404, 409),
)
def patch_layer(id: str, body: LayerPatch) -> LayerEnvelope:
    return _updated(layers.patch(id, body))


@router.delete(
    ONE,
    tags=TAGS,
    summary="Delete a layer no experiment or holdout uses",
    responses=responses(200, Message, "Deleted", 404, 409),
)
def delete_layer(id: str) -> Message:
    layers.delete(id)
    return Message(message="Layer deleted successfully.")


@router.get(
    f"{ONE}/experiments",
    tags=TAGS,
    summary="Experiments placed in the layer",
    responses=responses(200, AnyListEnvelope, "The layer's experiments", 404),
)
def list_layer_experiments(id: str, query: Annotated[PageQuery, Query()]) -> AnyListEnvelope:
    # Imported here: only this route needs the experiment models in the layers function.
    from expconsole.services import experiments

    page = layers.experiments(id, query.page, query.limit, experiments.present)
    return AnyListEnvelope.model_validate(paged("Experiments listed successfully.", page, router))


app, lambda_handler = build(router, key_kind="console")
