"""The evaluator's input rules and the v2 conversion (answers are judged by the SDKs in functional)."""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.services.sdk.evaluator import Evaluator
from expconsole.services.sdk.hashing import id_list_hash, unit_hash
from expconsole.services.sdk.v2 import v1_to_v2
from tests.functional.sdk_specs import PUBLIC, cond, main_document, rule, spec


class _IdLists:
    """The one thing the SDK's evaluator asks its spec store when it checks an id list."""

    def __init__(self, lists: dict[str, Any]) -> None:
        self.lists = lists

    def get_id_list(self, name: str) -> Any:
        return self.lists.get(name)


def _sdk_finds(unit_id: object, stored: set[str]) -> bool:
    """The `statsig` SDK's own id-list lookup (`_Evaluator.__check_id_in_list`, statsig 0.72.1 is
    pinned) over a list holding `stored`, as it holds a downloaded `+<hash>` file."""
    from statsig.evaluator import _Evaluator

    sdk = object.__new__(_Evaluator)
    sdk._spec_store = _IdLists({"list": {"ids": stored}})
    found: bool = sdk._Evaluator__check_id_in_list(unit_id, "list")  # type: ignore[attr-defined]
    return found


def test_hashes_are_the_sdks() -> None:
    from statsig.utils import sha256_hash

    for key in ("salt.rule.user-1", "é.ü.ß", ""):
        assert unit_hash(key) == sha256_hash(key)


@pytest.mark.parametrize("unit_id", ["user-1", "é.ü.ß 🙂", " padded ", 12345, "x" * 500])
def test_an_id_list_written_with_id_list_hash_is_read_alike_by_the_sdk_and_the_evaluator(
    unit_id: object,
) -> None:
    stored = {id_list_hash(unit_id)}  # what services/sdk/documents.py writes for the id
    assert _sdk_finds(unit_id, stored)
    assert not _sdk_finds(f"{unit_id}-other", stored)
    gate = spec("members", "feature_gate", [rule("r", [cond("unit_id", "in_segment_list", "list")])])
    evaluator = Evaluator({"feature_gates": [gate]}, {"list": stored})
    assert evaluator.check_gate({"userID": str(unit_id)}, "members").value is True
    assert evaluator.check_gate({"userID": f"{unit_id}-other"}, "members").value is False


@pytest.mark.parametrize(
    ("user", "field"),
    [
        ({}, "userID or at least one of customIDs"),
        ({"userID": ""}, "userID or at least one of customIDs"),
        ({"userID": "u", "custom": ["x"]}, "user.custom"),
        ({"userID": "u", "customIDs": "c"}, "user.customIDs"),
        ({"userID": "u", "statsigEnvironment": "prod"}, "user.statsigEnvironment"),
        ("not a user", "user: must be an object"),
    ],
)
def test_a_user_the_sdk_would_refuse_is_a_value_error_naming_the_field(user: object, field: str) -> None:
    evaluator = Evaluator(main_document())
    with pytest.raises(ValueError, match=field):
        evaluator.check_gate(user, "rollout_30")  # type: ignore[arg-type]


def test_a_user_with_only_a_custom_id_is_evaluated_on_it() -> None:
    evaluator = Evaluator(main_document())
    result = evaluator.get_config({"customIDs": {"companyID": "c1"}}, "company_config")
    assert result.rule_id in ("r_company_config", "default")
    assert result.id_type == "companyID"


def test_v2_keys_specs_by_name_shares_conditions_and_drops_a_disabled_specs_rules() -> None:
    doc = {
        "time": 5,
        "feature_gates": [
            spec("a", "feature_gate", [rule("ra", [PUBLIC]), rule("r2", [cond("user_field", "eq", 1, "f")])]),
            spec("b", "feature_gate", [rule("rb", [PUBLIC])]),
            spec("off", "feature_gate", [rule("roff", [PUBLIC])], enabled=False),
        ],
        "dynamic_configs": [],
        "layer_configs": [],
        "layers": {"l": ["e1", "e2"]},
    }
    converted = v1_to_v2(doc)
    assert set(converted["feature_gates"]) == {"a", "b", "off"}
    assert converted["feature_gates"]["off"]["rules"] == []
    assert len(converted["condition_map"]) == 2  # PUBLIC once, shared by a and b
    public_key = converted["feature_gates"]["a"]["rules"][0]["conditions"][0]
    assert converted["feature_gates"]["b"]["rules"][0]["conditions"] == [public_key]
    assert converted["condition_map"][public_key]["type"] == "public"
    assert converted["experiment_to_layer"] == {"e1": "l", "e2": "l"}
    assert converted["time"] == 5 and converted["has_updates"] is True
    assert doc["feature_gates"][2]["rules"]  # the v1 document is left as it was


def test_an_unparsable_bucket_target_fails_the_document_like_the_sdk() -> None:
    doc = {"feature_gates": [spec("g", "feature_gate", [rule("r", [cond("user_bucket", "any", ["x"])])])]}
    with pytest.raises(ValueError):
        Evaluator(doc)
