"""The stored experiment (models/experiments_stored.py) and the answered one (models/experiments.py),
without a server or a store.

A stored item must read and write back unchanged, whatever shape it was written in: an
experiment's keys follow its history (a key set after the create comes after `version`), and
its `_state` and `_health` are written by other modules too (services.layer_buckets, pulse).
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.models.experiments import (
    Experiment,
    ExperimentEnvelope,
    ExperimentFields,
    ExperimentListEnvelope,
)
from expconsole.models.experiments_requests import ExperimentCreate, ExperimentPatch
from expconsole.models.experiments_stored import ExperimentState, StoredExperiment
from expconsole.services import entities, experiments
from expconsole.services.common import lifecycle
from tests.unit.stored_items import CREATED_AND_MODIFIED, written

GROUPS = [
    {
        "name": "Control",
        "id": "g1",
        "size": 50,
        "parameterValues": {},
        "description": "",
        "disabled": False,
        "highlighted": False,
    },
    {
        "name": "Test",
        "id": "g2",
        "size": 50.0,
        "parameterValues": {"color": "red", "n": 1.5},
        "description": "d",
        "disabled": True,
        "highlighted": True,
        "foreignGroupID": "f2",
    },
]
RULES = [
    {
        "id": "r1",
        "baseID": "r1",
        "name": "us",
        "passPercentage": 12.5,
        "conditions": [
            {"type": "country", "operator": "any", "targetValue": ["US"]},
            {"type": "passes_gate", "targetValue": "g"},
        ],
        "environments": ["production"],
        "returnValue": {"a": 1},
        "completedAutomatedRollouts": [{"passPercent": 5, "time": 1}],
    },
    {
        "id": "r2",
        "baseID": "r2",
        "name": "all",
        "passPercentage": 100,
        "conditions": [],
        "environments": None,
    },
]

# An experiment as services/experiments.py writes it at create: the fields every experiment holds
# (in defaults()' order), the ones sent that only some hold, then the owner and bookkeeping.
STORED: dict[str, Any] = {
    "id": "checkout_flow",
    "name": "checkout flow",
    **{**experiments.defaults(), "groups": GROUPS, "inlineTargetingRules": RULES},
    "allocation": 33.3,
    "userBuckets": [1, 2, 3],
    "primaryMetrics": [{"name": "buy", "type": "event_count", "direction": "increase"}],
    "reviewSettings": {
        "requiredReview": True,
        "allowedReviewers": [{"id": "u", "name": "U", "email": "u@x"}],
    },
    "scheduledReloadDays": [1, 3],
    "identifierMappingMode": "strictOneToOne",
    "externalExperimentName": "ext",
    "controlGroupID": "g1",
    "targetExposures": 1000,
    "defaultChanceToBeatThreshold": 95.5,
    "stratifiedSampling": {"status": "pending", "useUnits": True},
    "owner": {"ownerID": "k1", "ownerType": "SDK_KEY", "ownerName": "CONSOLE API", "ownerEmail": ""},
    **CREATED_AND_MODIFIED,
    "version": 1,
}

INTERNAL = ("_state", "_health")
PAGINATION = {
    "itemsPerPage": 1,
    "pageNumber": 1,
    "totalItems": 1,
    "nextPage": None,
    "previousPage": None,
    "all": "/console/v1/experiments",
}
# The keys STORED holds only because they were sent.
OPTIONAL = (
    "identifierMappingMode",
    "externalExperimentName",
    "controlGroupID",
    "targetExposures",
    "defaultChanceToBeatThreshold",
    "stratifiedSampling",
)
# As services.pulse.run.health_doc writes it.
HEALTH = {
    "status": "FAILED",
    "checks": [
        {"name": "SRM", "description": "d", "status": "FAILED", "type": "srm", "metadata": {"p": 0.001}}
    ],
}


def test_a_stored_experiment_reads_and_writes_back_byte_for_byte() -> None:
    stored = StoredExperiment.read(STORED)
    assert stored.groups[1].foreignGroupID == "f2"
    assert stored.inlineTargetingRules[0].returnValue == {"a": 1}
    assert written(stored.doc()) == written(STORED)


@pytest.mark.parametrize(
    "older",
    [
        # Started in a layer (the buckets it took), with pulse's health checks and another module's key.
        {**STORED, "status": "active", "startTime": 5, "_state": {"layerBuckets": [0, 1]}, "_health": HEALTH},
        {**STORED, "_other": [1], "_state": {"layerBuckets": [4], "note": "kept"}},
        # Its `_state` keys in the order its history wrote them; an empty `_state` (unarchived).
        {**STORED, "_state": {"layerBuckets": [4], "analysisStartTime": "2026-01-01"}},
        {**STORED, "_state": {"analysisStartTime": "2026-01-01", "layerBuckets": [4]}},
        {**STORED, "_state": {}},
        # Archived (the state it left, a null reason), as archive writes it.
        {
            **STORED,
            "status": "archived",
            "_state": {
                "layerBuckets": [9],
                "archivedFrom": "decision_made",
                "archiveReason": None,
                "archivedTime": 7,
            },
        },
        # Keys set after the create come after `version`, in the order they were set.
        {
            **{k: v for k, v in STORED.items() if k not in ("controlGroupID", "stratifiedSampling")},
            "scheduledStartTime": 1_800_000_000_000,
            "_state": {"archivedFrom": "setup"},
            "stratifiedSampling": {"status": "error"},
            "analysisEndTime": "2026-02-01",
            "controlGroupID": "g2",
        },
        # None of the keys stored only when sent.
        {k: v for k, v in STORED.items() if k not in OPTIONAL},
    ],
)
def test_an_older_shape_reads_and_writes_back_unchanged(older: dict[str, Any]) -> None:
    stored = StoredExperiment.read(older)
    assert written(stored.doc()) == written(older)
    assert lifecycle.is_archived(stored.doc()) == lifecycle.is_archived(older)


def test_missing_internal_keys_read_as_the_defaults_and_are_written_once_set() -> None:
    stored = StoredExperiment.read(STORED)
    assert stored.state == ExperimentState()
    assert stored.health is None
    assert not set(INTERNAL) & set(stored.doc())
    stored.state.layerBuckets = [3]
    stored.state = stored.state
    assert stored.doc()["_state"] == {"layerBuckets": [3]}
    assert list(stored.doc())[-1] == "_state"


def test_a_change_keeps_every_key_where_it_was_and_adds_new_ones_last() -> None:
    stored = StoredExperiment.read({**STORED, "_health": HEALTH})
    stored.set_fields({"description": "new", "groups": GROUPS[::-1], "analysisEndTime": "2026-03-01"})
    stored.scheduledStartTime = 9
    doc = stored.doc()
    assert list(doc) == [*STORED, "_health", "analysisEndTime", "scheduledStartTime"]
    assert doc["groups"] == GROUPS[::-1]
    assert doc["_health"] == HEALTH


def test_unset_leaves_a_key_out_and_set_again_it_comes_last() -> None:
    stored = StoredExperiment.read({**STORED, "scheduledStartTime": 9, "_state": {"a": 1}})
    stored.unset("controlGroupID")
    stored.unset("scheduledStartTime")
    assert "controlGroupID" not in stored.doc()
    assert stored.controlGroupID is None
    stored.controlGroupID = "g2"
    assert list(stored.doc())[-2:] == ["_state", "controlGroupID"]


def test_state_keys_keep_their_order_and_archive_keys_come_last() -> None:
    stored = StoredExperiment.read({**STORED, "_state": {"layerBuckets": [1], "analysisStartTime": "x"}})
    state = stored.state
    state.archivedFrom = "abandoned"
    state.archiveReason = None
    state.archivedTime = 5
    stored.state = state
    assert written(stored.doc()["_state"]) == written(
        {
            "layerBuckets": [1],
            "analysisStartTime": "x",
            "archivedFrom": "abandoned",
            "archiveReason": None,
            "archivedTime": 5,
        }
    )
    for name in ("archivedFrom", "archiveReason", "archivedTime"):
        state.unset(name)
    assert written(stored.doc()["_state"]) == written({"layerBuckets": [1], "analysisStartTime": "x"})


def test_a_new_experiment_stores_its_fields_in_the_declared_order() -> None:
    """defaults() and the bookkeeping are ExperimentFields in their order, so a created experiment
    (read from nothing but what it sets) writes its keys as the service always has."""
    fields = list(ExperimentFields.model_fields)
    assert fields[: 2 + len(experiments.defaults())] == ["id", "name", *experiments.defaults()]
    assert [f for f in fields if f in STORED] == [k for k in STORED if k in fields]


def test_request_fields_are_experiment_fields_but_the_rules_as_json() -> None:
    """A field a client may send is an `ExperimentFields` field (stored and answered as it is named),
    so adding one is a line there and one in the request model."""
    assert ExperimentCreate.model_fields.keys() - ExperimentFields.model_fields.keys() == {
        "inlineTargetingRulesJSON"
    }
    assert ExperimentPatch.model_fields.keys() - ExperimentFields.model_fields.keys() == {
        "inlineTargetingRulesJSON"
    }


def answered(answer: Experiment) -> dict[str, Any]:
    """The experiment as an envelope answers it (the answer's keys, in their order)."""
    data: dict[str, Any] = ExperimentEnvelope(message="m", data=answer).model_dump(mode="json")["data"]
    return data


DERIVED = [
    "inlineTargetingRulesJSON",
    "permalink",
    "isStale",
    "qualityScore",
    "healthCheckStatus",
    "healthChecks",
]


def test_the_answer_is_the_stored_public_fields_in_their_order_then_the_derived_ones() -> None:
    later = {**STORED, "_health": HEALTH, "_state": {"layerBuckets": [1]}, "analysisEndTime": "2026-03-01"}
    answer = experiments.answer(later)
    dumped = answered(answer)
    assert list(dumped) == [*entities.public(later), *DERIVED]
    assert written(dumped) == written(experiments.present(later))
    assert dumped["healthCheckStatus"] == "FAILED"
    assert list(Experiment.model_fields) == [*ExperimentFields.model_fields, *DERIVED]
    listed = ExperimentListEnvelope(message="m", data=[answer], pagination=PAGINATION)
    assert written(listed.model_dump(mode="json")["data"][0]) == written(dumped)


def test_an_answer_leaves_out_the_keys_its_item_does_not_hold() -> None:
    item = {k: v for k, v in STORED.items() if k not in OPTIONAL}
    dumped = answered(experiments.answer(item))
    assert not set(OPTIONAL) & set(dumped)
    assert "foreignGroupID" not in dumped["groups"][0]
    assert "returnValue" not in dumped["inlineTargetingRules"][1]


def test_an_envelope_answers_warnings_only_when_given() -> None:
    answer = experiments.answer(STORED)
    assert list(ExperimentEnvelope(message="m", data=answer).model_dump(mode="json")) == ["message", "data"]
    with_warnings = ExperimentEnvelope(message="m", data=answer, warnings=[])
    assert with_warnings.model_dump(mode="json")["warnings"] == []
