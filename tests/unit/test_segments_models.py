"""The stored segment and the answered segment (models/segments.py), without a server or a store.

A stored item must read and write back unchanged, whatever shape it was written in; the answer
built from it must be the stored public fields, in their stored order, then `isArchived`.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.models.segments import (
    Segment,
    SegmentContent,
    SegmentCreate,
    SegmentFields,
    SegmentState,
    StoredSegment,
)
from expconsole.services.common import lifecycle
from expconsole.services.segments import present
from tests.unit.stored_items import CREATED_AND_MODIFIED, written

# What every segment stores, as services/segments.py writes it, nulls where it stores them.
FIELDS: dict[str, Any] = {
    "id": "beta",
    "name": "beta",
    "type": "rule_based",
    "description": "d",
    "idType": "userID",
    "isEnabled": True,
    "tags": ["t"],
    "targetApps": [],
    "holdoutIDs": [],
    "team": None,
    "teamID": "t1",
    **CREATED_AND_MODIFIED,
    "version": 2,
}
# A rule_based segment: `rules` after `_state`, every optional rule key in its stored place.
RULE_BASED: dict[str, Any] = {
    **FIELDS,
    "_state": {"archived": False},
    "rules": [
        {
            "id": "r1",
            "baseID": "r1",
            "name": "us",
            "passPercentage": 12.5,
            "conditions": [
                {"type": "country", "operator": "any", "targetValue": ["US"]},
                {"type": "passes_segment", "targetValue": "other"},
            ],
            "environments": None,
            "returnValue": {"k": 1},
            "completedAutomatedRollouts": [{"passPercent": 5, "time": 1}],
            "pendingAutomatedRollouts": [{"passPercent": 50, "time": 2}],
        },
        {
            "id": "r2",
            "baseID": "r2",
            "name": "all",
            "passPercentage": 100,
            "conditions": [],
            "environments": ["dev"],
        },
    ],
}
# An id_list segment: `count` after `_state`, which holds the key of its ids.
ID_LIST: dict[str, Any] = {
    **FIELDS,
    "id": "testers",
    "type": "id_list",
    "_state": {"archived": False, "idListKey": "abc"},
    "count": 3,
}


@pytest.mark.parametrize(
    "stored",
    [
        RULE_BASED,
        ID_LIST,
        # Archived as services.common.lifecycle writes it, an internal key of another module after.
        {**ID_LIST, "_state": {"archived": True, "archiveReason": None, "archivedTime": 5}, "_health": {}},
        # State keys the segment does not declare: a passed schedule lifecycle.is_archived reads.
        {**RULE_BASED, "_state": {"archived": False, "scheduledArchiveTime": 5}},
        # No `_state` at all.
        {k: v for k, v in RULE_BASED.items() if k != "_state"},
    ],
)
def test_a_stored_segment_reads_and_writes_back_byte_for_byte(stored: dict[str, Any]) -> None:
    segment = StoredSegment.read(stored)
    assert written(segment.doc()) == written(stored)
    assert lifecycle.is_archived(segment.doc(), now=10) == lifecycle.is_archived(stored, now=10)


def test_the_state_and_the_content_read_typed() -> None:
    assert StoredSegment.read(ID_LIST).state == SegmentState(archived=False, idListKey="abc")
    assert StoredSegment.read(ID_LIST).rules is None
    assert StoredSegment.read(RULE_BASED).count is None
    assert "_state" not in StoredSegment.read({k: v for k, v in ID_LIST.items() if k != "_state"}).doc()


def test_a_change_keeps_every_key_where_it_was() -> None:
    segment = StoredSegment.read(ID_LIST)
    segment.count = 4
    assert list(segment.doc()) == list(ID_LIST)
    segment = StoredSegment.read(RULE_BASED)
    segment.set_fields({"rules": RULE_BASED["rules"][1:]})
    assert written(segment.doc()) == written({**RULE_BASED, "rules": RULE_BASED["rules"][1:]})


@pytest.mark.parametrize("stored", [RULE_BASED, ID_LIST])
def test_the_answer_is_the_stored_public_fields_in_order_then_is_archived(stored: dict[str, Any]) -> None:
    answered = {k: v for k, v in stored.items() if k != "_state"}
    answer = present(StoredSegment.read(stored)).model_dump(mode="json")
    assert written(answer) == written({**answered, "isArchived": False})


def test_request_fields_are_segment_fields() -> None:
    """A field a client may send is a `SegmentFields` or `SegmentContent` field (stored and
    answered as it is named), so adding one is a line there and one per request model."""
    assert SegmentCreate.model_fields.keys() <= SegmentFields.model_fields.keys() | {"rules"}
    assert list(Segment.model_fields) == [
        *SegmentFields.model_fields,
        *SegmentContent.model_fields,
        "isArchived",
    ]
