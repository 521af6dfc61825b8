"""The stored layer and the answered layer (models/layers.py), without a server or a store.

A stored item must read and write back unchanged, whatever shape it was written in; the answer
built from it must be the stored public fields, in their stored order, then `holdoutIDs` and
`permalink`.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole import kinds
from expconsole.models.layers import Layer, LayerCreate, LayerFields, LayerPatch, LayerUpdate, StoredLayer
from expconsole.services import entities
from expconsole.services.layers import present
from tests.unit.stored_items import CREATED_AND_MODIFIED, written

# A layer as services/layers.py writes it, nulls where it stores them.
STORED: dict[str, Any] = {
    "id": "checkout",
    "name": "checkout",
    "description": "d",
    "idType": "userID",
    "isImplicitLayer": False,
    "parameters": [
        {"name": "color", "type": "string", "defaultValue": "grey"},
        {"name": "ratio", "type": "number", "defaultValue": 1.0},
        {"name": "extra", "type": "object", "defaultValue": {"z": None, "a": [1, "x"]}},
    ],
    "targetApps": ["web"],
    "tags": ["t"],
    "team": None,
    "teamID": "t1",
    "owner": {"ownerID": "k1", "ownerType": "SDK_KEY", "ownerName": "CONSOLE API", "ownerEmail": ""},
    **CREATED_AND_MODIFIED,
    "version": 2,
}


def test_a_stored_layer_reads_and_writes_back_byte_for_byte() -> None:
    assert written(StoredLayer.read(STORED).doc()) == written(STORED)


@pytest.mark.parametrize(
    "older",
    [
        # Internal keys of other modules, kept where they are.
        {**STORED, "_health": {"a": 1}, "_other": [1]},
        # A float default that is a whole number stays a float.
        {**STORED, "parameters": [{"name": "n", "type": "number", "defaultValue": 2.0}]},
    ],
)
def test_an_older_shape_reads_and_writes_back_unchanged(older: dict[str, Any]) -> None:
    assert written(StoredLayer.read(older).doc()) == written(older)


def test_set_fields_validates_json_values_as_the_stored_types() -> None:
    layer = StoredLayer.read(STORED)
    layer.set_fields({"parameters": [{"name": "b", "type": "boolean", "defaultValue": True}], "team": "core"})
    assert layer.doc()["parameters"] == [{"name": "b", "type": "boolean", "defaultValue": True}]
    assert list(layer.doc()) == list(STORED), "a change keeps every key where it was"


def test_the_answer_is_the_stored_public_fields_in_order_then_holdouts_and_permalink() -> None:
    stored = StoredLayer.read({**STORED, "_health": {}})
    answer = present(stored, {"checkout": ["h1"]}).model_dump(mode="json")
    permalink = entities.permalink(kinds.LAYER, "checkout")  # the request's base URL, if any
    assert written(answer) == written({**STORED, "holdoutIDs": ["h1"], "permalink": permalink})


def test_request_fields_are_layer_fields() -> None:
    """A field a client may send is a `LayerFields` field (stored and answered as it is named),
    so adding one is a line there and one per request model; `version` is the optimistic lock."""
    assert LayerCreate.model_fields.keys() <= LayerFields.model_fields.keys()
    assert LayerUpdate.model_fields.keys() <= LayerFields.model_fields.keys()
    assert LayerPatch.model_fields.keys() <= LayerFields.model_fields.keys()
    assert list(Layer.model_fields) == [*LayerFields.model_fields, "holdoutIDs", "permalink"]
