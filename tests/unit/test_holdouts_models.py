"""The stored holdout and the answered holdout (models/holdouts.py), without a server or a store.

A stored item must read and write back unchanged, whatever shape it was written in; the answer
built from it must be the stored public fields, in their stored order, then `isArchived` and
`permalink`.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole import kinds
from expconsole.models.holdouts import (
    Holdout,
    HoldoutCreate,
    HoldoutFields,
    HoldoutPatch,
    HoldoutUpdate,
    StoredHoldout,
)
from expconsole.services import entities
from expconsole.services.holdouts import present
from tests.unit.stored_items import CREATED_AND_MODIFIED, assert_state_optional, assert_written_back, written

# A holdout as services/holdouts.py writes it, nulls where it stores them.
STORED: dict[str, Any] = {
    "id": "h1",
    "name": "h1",
    "description": "d",
    "idType": "userID",
    "isEnabled": True,
    "isGlobal": False,
    "passPercentage": 2.5,
    "gateIDs": ["g1"],
    "experimentIDs": ["e1", "e2"],
    "layerIDs": [],
    "targetingGateID": None,
    "targetApps": ["web"],
    "tags": ["t"],
    "team": None,
    "teamID": "t1",
    "monitoringMetrics": [{"name": "m", "type": "event_count"}],
    "owner": {"ownerID": "k1", "ownerType": "SDK_KEY", "ownerName": "CONSOLE API", "ownerEmail": ""},
    **CREATED_AND_MODIFIED,
    "version": 2,
    "_state": {"archived": False},
}


def test_a_stored_holdout_reads_and_writes_back_byte_for_byte() -> None:
    holdout = StoredHoldout.read(STORED)
    assert holdout.state.archived is False
    assert written(holdout.doc()) == written(STORED)


@pytest.mark.parametrize(
    "older",
    [
        # No `_state` at all.
        {k: v for k, v in STORED.items() if k != "_state"},
        # Archived, with a null reason, and an internal key of another module after it.
        {**STORED, "_state": {"archived": True, "archiveReason": None, "archivedTime": 5}, "_health": {}},
        # State keys the holdout does not declare, kept; a whole-number float percentage stays a float.
        {**STORED, "_state": {"archived": False, "note": "kept"}, "passPercentage": 10.0},
        # An empty targeting gate (none), metric references in another key order.
        {
            **STORED,
            "passPercentage": 0,
            "targetingGateID": "",
            "monitoringMetrics": [{"type": "t", "name": "x"}],
        },
    ],
)
def test_an_older_shape_reads_and_writes_back_unchanged(older: dict[str, Any]) -> None:
    assert_written_back(StoredHoldout, older)


def test_a_missing_state_reads_as_not_archived_and_is_not_written() -> None:
    assert_state_optional(StoredHoldout, STORED)


def test_set_fields_validates_json_values_as_the_stored_types() -> None:
    holdout = StoredHoldout.read(STORED)
    holdout.set_fields({"passPercentage": 5, "experimentIDs": [], "team": "core", "targetingGateID": "g"})
    assert holdout.doc()["passPercentage"] == 5
    assert isinstance(holdout.doc()["passPercentage"], int)
    assert list(holdout.doc()) == list(STORED), "a change keeps every key where it was"


def test_the_answer_is_the_stored_public_fields_in_order_then_is_archived_and_permalink() -> None:
    answered = {k: v for k, v in STORED.items() if k != "_state"}
    permalink = entities.permalink(kinds.HOLDOUT, "h1")  # the request's base URL, if any
    answer = present(StoredHoldout.read({**STORED, "_health": {}})).model_dump(mode="json")
    assert written(answer) == written({**answered, "isArchived": False, "permalink": permalink})
    archived = {**STORED, "_state": {"archived": True, "archiveReason": None, "archivedTime": 5}}
    assert present(StoredHoldout.read(archived)).isArchived is True


def test_request_fields_are_holdout_fields() -> None:
    """A field a client may send is a `HoldoutFields` field (stored and answered as it is named),
    so adding one is a line there and one per request model; `version` is the optimistic lock."""
    assert HoldoutCreate.model_fields.keys() <= HoldoutFields.model_fields.keys()
    assert HoldoutUpdate.model_fields.keys() <= HoldoutFields.model_fields.keys()
    assert HoldoutPatch.model_fields.keys() <= HoldoutFields.model_fields.keys()
    assert list(Holdout.model_fields) == [*HoldoutFields.model_fields, "isArchived", "permalink"]
