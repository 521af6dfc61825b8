"""The stored gate and the answered gate (models/gates.py), without a server or a store.

A stored item must read and write back unchanged, whatever shape it was written in; the answer
built from it must be the stored public fields, in their stored order, then the derived ones.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.models.gates import Gate, GateCreate, GateFields, GatePatch, GateState, StoredGate
from expconsole.services import entities
from expconsole.services.gates import present
from expconsole.store.gate_checks import Usage, hour_of
from tests.unit.stored_items import CREATED_AND_MODIFIED, assert_written_back, written

# Checked in the last hour, 12 checks an hour: not stale from the SDKs' side, 12 checks per hour.
CHECKED = Usage(checks=288, passes=100, first_checked=hour_of(0), last_checked=hour_of(entities.now_ms()))

# A gate as services/gates.py writes it: every rule and condition shape, nulls where it stores them.
STORED: dict[str, Any] = {
    "id": "checkout",
    "name": "checkout",
    "description": "d",
    "idType": "stableID",
    "isEnabled": True,
    "rules": [
        {
            "id": "r1",
            "baseID": "r1",
            "name": "us",
            "passPercentage": 12.5,
            "conditions": [
                {"type": "country", "operator": "any", "targetValue": ["US"]},
                {"type": "custom_field", "operator": "gt", "targetValue": 3, "field": "age"},
                {"type": "passes_gate", "targetValue": "other"},
            ],
            "environments": ["production"],
            "completedAutomatedRollouts": [{"passPercent": 5, "time": 1}],
        },
        {
            "id": "r2",
            "baseID": "r2",
            "name": "all",
            "passPercentage": 100,
            "conditions": [{"type": "public"}],
            "environments": None,
        },
    ],
    "checksPerHour": 0,
    "tags": ["web"],
    "targetApps": ["app1"],
    "holdoutIDs": [],
    "team": None,
    "teamID": "t1",
    "reviewSettings": {"requiredReview": False, "allowedReviewers": None},
    "measureMetricLifts": True,
    "store0100Exposures": False,
    "monitoringMetrics": [{"name": "m", "type": "event_count"}],
    "releasePipelineID": None,
    "isTemplate": False,
    "owner": {"ownerID": "k1", "ownerType": "SDK_KEY", "ownerName": "CONSOLE API", "ownerEmail": ""},
    **CREATED_AND_MODIFIED,
    "version": 2,
    "_type": "TEMPORARY",
    "_state": {"launched": False, "archived": False},
}

INTERNAL = ("_type", "_state")


def test_a_stored_gate_reads_and_writes_back_byte_for_byte() -> None:
    gate = StoredGate.read(STORED)
    assert gate.declared_type == "TEMPORARY"
    assert gate.state.launched is False
    assert written(gate.doc()) == written(STORED)


@pytest.mark.parametrize(
    "older",
    [
        # Internal keys of other modules (an experiment's `_health`) and state keys the gate does not declare.
        {**STORED, "_health": {"srm": "ok"}, "_state": {"launched": True, "archived": False, "note": "kept"}},
        # No `_type` nor `_state` at all.
        {k: v for k, v in STORED.items() if k not in INTERNAL},
        # Archived, with a null reason.
        {**STORED, "_state": {"archived": True, "archiveReason": None, "archivedTime": 5}},
        # The older archived shapes lifecycle.is_archived reads: a stored status, a passed schedule.
        {**STORED, "status": "archived"},
        {**STORED, "_state": {"launched": False, "archived": False, "scheduledArchiveTime": 5}},
    ],
)
def test_an_older_shape_reads_and_writes_back_unchanged(older: dict[str, Any]) -> None:
    assert_written_back(StoredGate, older)


def test_missing_internal_keys_read_as_the_defaults_and_are_written_once_set() -> None:
    gate = StoredGate.read({k: v for k, v in STORED.items() if k not in INTERNAL})
    assert gate.declared_type is None
    assert gate.state == GateState()
    gate.state = gate.state.model_copy(update={"launched": True})
    assert gate.doc()["_state"] == {"launched": True}
    assert "_type" not in gate.doc()


def test_set_fields_validates_json_values_as_the_stored_types() -> None:
    gate = StoredGate.read(STORED)
    gate.set_fields(
        {"owner": {"ownerID": "o", "ownerType": "USER", "ownerName": "", "ownerEmail": ""}, "team": "core"}
    )
    assert gate.owner.ownerID == "o"
    assert gate.doc()["owner"] == {"ownerID": "o", "ownerType": "USER", "ownerName": "", "ownerEmail": ""}
    assert list(gate.doc()) == list(STORED), "a change keeps every key where it was"


def test_the_answer_is_the_stored_public_fields_in_order_then_the_derived_ones() -> None:
    gate = present(StoredGate.read(STORED), CHECKED)
    derived = {
        "status": "In Progress",
        "type": "TEMPORARY",
        "typeReason": "NONE",
        "permalink": entities.permalink("GATE", "checkout"),
    }
    answered = {**entities.public(STORED), "checksPerHour": 12, **derived}
    assert written(gate.model_dump(mode="json")) == written(answered)


def test_an_answer_leaves_out_the_rule_and_condition_keys_the_store_leaves_out() -> None:
    rules = present(StoredGate.read(STORED), CHECKED).model_dump(mode="json")["rules"]
    assert rules[0]["conditions"][2] == {"type": "passes_gate", "targetValue": "other"}
    assert "pendingAutomatedRollouts" not in rules[0]
    assert rules[1] == STORED["rules"][1], "environments stays, as null"


def test_older_shapes_answer_as_lifecycle_and_the_defaults_read_them() -> None:
    assert present(StoredGate.read({**STORED, "status": "archived"}), CHECKED).status == "Archived"
    without_internal = StoredGate.read({k: v for k, v in STORED.items() if k not in INTERNAL})
    assert present(without_internal, CHECKED).type == "TEMPORARY"


def test_request_fields_are_gate_fields_but_the_options_stored_elsewhere() -> None:
    """A field a client may send is a `GateFields` field (stored and answered as it is named), so
    adding one is a line there and one per request model; `type` is stored as `_type`."""
    assert GateCreate.model_fields.keys() - GateFields.model_fields.keys() == {"type"}
    assert GatePatch.model_fields.keys() - GateFields.model_fields.keys() == {"type"}
    assert list(Gate.model_fields) == [*GateFields.model_fields, "status", "type", "typeReason", "permalink"]
