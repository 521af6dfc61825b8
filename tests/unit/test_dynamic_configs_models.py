"""The stored dynamic config and the answered one (models/dynamic_configs.py), without a server or
a store.

A stored item must read and write back unchanged, whatever shape it was written in; the answer
built from it must be the stored public fields, in their stored order (`targetApps` as one string,
the optional fields left out when null), then `status` and `permalink`.
"""

from __future__ import annotations

from typing import Any

import pytest

from expconsole import kinds
from expconsole.models.dynamic_configs import (
    DynamicConfig,
    DynamicConfigCreate,
    DynamicConfigFields,
    DynamicConfigPatch,
    DynamicConfigUpdate,
    StoredDynamicConfig,
)
from expconsole.services import entities
from expconsole.services.dynamic_configs import present as present_stored
from tests.unit.stored_items import CREATED_AND_MODIFIED, assert_state_optional, assert_written_back, written

# A config as services/dynamic_configs.py writes it: a rule with rollouts, one with variants, and
# the optional fields null where it stores them so.
STORED: dict[str, Any] = {
    "id": "cfg",
    "name": "cfg",
    "description": "d",
    "idType": "userID",
    "isEnabled": True,
    "rules": [
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
            "completedAutomatedRollouts": [{"passPercent": 5, "time": 1}],
            "returnValue": {"timeout": 5, "ratio": 1.0},
            "returnValueJson5": "{timeout: 5, ratio: 1.0}",
        },
        {
            "id": "r2",
            "baseID": "r2",
            "name": "split",
            "passPercentage": 100,
            "conditions": [],
            "environments": None,
            "returnValue": {},
            "returnValueJson5": "{}",
            "variants": [
                {
                    "id": "v1",
                    "name": "a",
                    "passPercentage": 50,
                    "returnValue": {"a": 1},
                    "returnValueJson5": "{a: 1}",
                },
                {
                    "id": "v2",
                    "name": "b",
                    "passPercentage": 50.0,
                    "returnValue": {},
                    "returnValueJson5": "{}",
                },
            ],
        },
    ],
    "defaultValue": {"timeout": 10},
    "defaultValueJson5": "{timeout: 10} // default",
    "schema": None,
    "schemaJson5": None,
    "releasePipelineID": None,
    "isTemplate": False,
    "checksPerHour": 0,
    "tags": ["t"],
    "targetApps": ["web", "ios"],
    "holdoutIDs": [],
    "team": None,
    "teamID": "t1",
    "owner": {"ownerID": "k1", "ownerType": "SDK_KEY", "ownerName": "CONSOLE API", "ownerEmail": ""},
    **CREATED_AND_MODIFIED,
    "version": 2,
    "_state": {"archived": False},
}


def present(doc: dict[str, Any]) -> DynamicConfig:
    """The answer to a stored item."""
    return present_stored(StoredDynamicConfig.read(doc))


def test_a_stored_config_reads_and_writes_back_byte_for_byte() -> None:
    config = StoredDynamicConfig.read(STORED)
    assert config.schema_ is None
    assert config.state.archived is False
    assert written(config.doc()) == written(STORED)


@pytest.mark.parametrize(
    "older",
    [
        # No `_state` at all.
        {k: v for k, v in STORED.items() if k != "_state"},
        # Archived, with a null reason, and an internal key of another module after it.
        {**STORED, "_state": {"archived": True, "archiveReason": None, "archivedTime": 5}, "_health": {}},
        # State keys the config does not declare; a schema and a pipeline set.
        {
            **STORED,
            "_state": {"archived": False, "note": "kept"},
            "schema": '{"type":"object"}',
            "schemaJson5": "{type: 'object'}",
            "releasePipelineID": "p",
        },
    ],
)
def test_an_older_shape_reads_and_writes_back_unchanged(older: dict[str, Any]) -> None:
    assert_written_back(StoredDynamicConfig, older)


def test_a_missing_state_reads_as_not_archived_and_is_not_written() -> None:
    assert_state_optional(StoredDynamicConfig, STORED)


def test_set_fields_validates_json_values_as_the_stored_types() -> None:
    config = StoredDynamicConfig.read(STORED)
    config.set_fields({"targetApps": ["android"], "team": "core", "schema_": '{"type":"object"}'})
    config.set_fields({"rules": [STORED["rules"][1]]})
    assert config.doc()["schema"] == '{"type":"object"}'
    assert config.doc()["rules"] == [STORED["rules"][1]], "a rule without variants stores no variants key"
    assert list(config.doc()) == list(STORED), "a change keeps every key where it was"


def test_the_answer_is_the_stored_public_fields_in_order_then_status_and_permalink() -> None:
    answer = present({**STORED, "_health": {}}).model_dump(mode="json", by_alias=True)
    expected = {
        **{k: v for k, v in STORED.items() if not k.startswith("_")},
        "targetApps": "web,ios",
        "status": "Enabled",
        "permalink": entities.permalink(kinds.DYNAMIC_CONFIG, "cfg"),
    }
    for optional in ("schema", "schemaJson5", "releasePipelineID", "team"):
        del expected[optional]
    assert written(answer) == written(expected)


def test_the_answer_keeps_the_optional_fields_when_set() -> None:
    answer = present({**STORED, "schema": "{}", "team": "T"}).model_dump(mode="json", by_alias=True)
    assert answer["schema"] == "{}" and answer["team"] == "T"
    assert list(answer).index("schema") == list(answer).index("defaultValueJson5") + 1
    assert present({**STORED, "_state": {"archived": True}}).status == "Archived"
    assert present({**STORED, "isEnabled": False}).status == "Disabled"


def test_request_fields_are_config_fields() -> None:
    """A field a client may send is a `DynamicConfigFields` field (stored and answered as it is
    named), so adding one is a line there and one per request model; `version` is the optimistic
    lock."""
    assert DynamicConfigCreate.model_fields.keys() <= DynamicConfigFields.model_fields.keys()
    assert DynamicConfigUpdate.model_fields.keys() <= DynamicConfigFields.model_fields.keys()
    assert DynamicConfigPatch.model_fields.keys() <= DynamicConfigFields.model_fields.keys()
    assert list(DynamicConfig.model_fields) == [*DynamicConfigFields.model_fields, "status", "permalink"]
