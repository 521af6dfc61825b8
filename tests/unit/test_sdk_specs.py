"""The spec document builder (services.sdk.specs.build): stored entities in, the SDKs' v1 JSON out.

Entities are written by hand in their stored shape; each test names the mapping the module's
docstring promises and checks the produced spec (and, where a bucket split is at stake, the split
the evaluator makes of it for many units).
"""

from __future__ import annotations

from typing import Any

import pytest
from scipy import stats

from expconsole.models.gates import StoredGate
from expconsole.services import gates
from expconsole.services.sdk import specs
from expconsole.services.sdk.evaluator import Evaluator
from expconsole.store.gate_checks import Usage
from tests.unit.test_gates_models import STORED

DAY_MS = 86_400_000
NOW = 1_767_225_600_000  # 2026-01-01T00:00Z


def gate(gid: str, rules: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"id": gid, "isEnabled": True, "rules": rules, "idType": "userID", "createdTime": 0, **extra}


def rule(rid: str, conditions: list[dict[str, Any]], pct: float = 100, **extra: Any) -> dict[str, Any]:
    return {"id": rid, "name": f"name {rid}", "passPercentage": pct, "conditions": conditions, **extra}


def exp(eid: str, status: str, sizes: tuple[float, ...] = (50, 50), **extra: Any) -> dict[str, Any]:
    groups = [
        {"id": f"{eid}.g{i}", "name": f"G{i}", "size": s, "parameterValues": {"v": i}}
        for i, s in enumerate(sizes)
    ]
    return {"id": eid, "status": status, "groups": groups, "idType": "userID", "createdTime": 0, **extra}


def build(**kinds: list[dict[str, Any]]) -> dict[str, Any]:
    return specs.build(specs.Snapshot(**kinds), NOW)


def by_name(doc: dict[str, Any], section: str) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in doc[section]}


# --- conditions ---------------------------------------------------------------------------------

CONDITION_CASES = [
    ({"type": "public"}, ("public", None)),
    ({"type": "user_id", "operator": "any", "targetValue": ["a"]}, ("user_field", "userID")),
    ({"type": "email", "operator": "str_ends_with_any", "targetValue": ["@x"]}, ("user_field", "email")),
    ({"type": "app_version", "operator": "version_gt", "targetValue": "1"}, ("user_field", "appVersion")),
    ({"type": "locale", "operator": "any", "targetValue": ["en"]}, ("user_field", "locale")),
    ({"type": "ip_address", "operator": "any", "targetValue": ["1.1.1.1"]}, ("user_field", "ip")),
    ({"type": "url", "operator": "str_contains_any", "targetValue": ["/x"]}, ("user_field", "url")),
    ({"type": "device_model", "operator": "any", "targetValue": ["m"]}, ("user_field", "deviceModel")),
    ({"type": "browser_name", "operator": "any", "targetValue": ["Chrome"]}, ("ua_based", "browser_name")),
    (
        {"type": "browser_version", "operator": "version_gte", "targetValue": "1"},
        ("ua_based", "browser_version"),
    ),
    ({"type": "os_name", "operator": "any", "targetValue": ["iOS"]}, ("ua_based", "os_name")),
    ({"type": "os_version", "operator": "version_lt", "targetValue": "14"}, ("ua_based", "os_version")),
    ({"type": "country", "operator": "any", "targetValue": ["DE"]}, ("ip_based", "country")),
    (
        {"type": "environment_tier", "operator": "any", "targetValue": ["staging"]},
        ("environment_field", "tier"),
    ),
    ({"type": "time", "operator": "after", "targetValue": 1}, ("current_time", None)),
    ({"type": "target_app", "operator": "any", "targetValue": ["web"]}, ("target_app", None)),
    ({"type": "custom_field", "operator": "gt", "targetValue": 3, "field": "age"}, ("user_field", "age")),
]


@pytest.mark.parametrize(("ours", "expected"), CONDITION_CASES, ids=[c[0]["type"] for c in CONDITION_CASES])
def test_each_field_condition_maps_to_its_statsig_type_and_field(
    ours: dict[str, Any], expected: tuple[str, str | None]
) -> None:
    out = specs.condition(ours, "userID")
    assert (out["type"], out["field"]) == expected
    assert out["operator"] == ours.get("operator")
    assert out["targetValue"] == (None if ours["type"] == "public" else ours["targetValue"])
    assert out["idType"] == "userID"


def test_unit_id_gate_and_segment_conditions() -> None:
    unit = specs.condition(
        {"type": "unit_id", "operator": "any", "targetValue": ["c1"], "customID": "companyID"}, "userID"
    )
    assert (unit["type"], unit["operator"], unit["targetValue"], unit["idType"]) == (
        "unit_id",
        "any",
        ["c1"],
        "companyID",
    )
    assert (
        specs.condition({"type": "unit_id", "operator": "none", "targetValue": ["x"]}, "stableID")["idType"]
        == "stableID"
    )
    pairs = {
        "passes_gate": ("pass_gate", "g1"),
        "fails_gate": ("fail_gate", "g1"),
        "passes_segment": ("pass_gate", "segment:g1"),
        "fails_segment": ("fail_gate", "segment:g1"),
    }
    for ours, (kind, target) in pairs.items():
        out = specs.condition({"type": ours, "targetValue": "g1"}, "userID")
        assert (out["type"], out["targetValue"]) == (kind, target), ours


def test_rule_environments_become_an_environment_tier_condition() -> None:
    doc = build(gates=[gate("g", [rule("r1", [], environments=["staging", "dev"]), rule("r2", [])])])
    r1, r2 = by_name(doc, "feature_gates")["g"]["rules"]
    assert r1["conditions"] == [
        {
            "type": "environment_field",
            "targetValue": ["staging", "dev"],
            "operator": "any",
            "field": "tier",
            "additionalValues": {},
            "idType": "userID",
        }
    ]
    assert r2["conditions"] == []
    ev = Evaluator(doc)
    assert ev.check_gate({"userID": "u", "statsigEnvironment": {"tier": "staging"}}, "g").rule_id == "r1"
    assert ev.check_gate({"userID": "u"}, "g").rule_id == "r2"  # production: r1 does not apply


# --- gates and configs ---------------------------------------------------------------------------


def test_rules_keep_order_percentage_and_their_own_id_as_salt() -> None:
    doc = build(gates=[gate("g", [rule("r1", [{"type": "public"}], 30), rule("r2", [], 0)])])
    spec = by_name(doc, "feature_gates")["g"]
    assert (spec["entity"], spec["enabled"], spec["salt"], spec["defaultValue"]) == (
        "feature_gate",
        True,
        "g",
        False,
    )
    assert [(r["id"], r["salt"], r["passPercentage"], r["groupName"]) for r in spec["rules"]] == [
        ("r1", "r1", 30, "name r1"),
        ("r2", "r2", 0, "name r2"),
    ]


def test_a_disabled_gate_or_config_is_served_without_rules() -> None:
    doc = build(
        gates=[gate("g", [rule("r", [])], isEnabled=False)],
        configs=[
            {**gate("c", [rule("r", [], returnValue={"a": 1})]), "isEnabled": False, "defaultValue": {"a": 0}}
        ],
    )
    g = by_name(doc, "feature_gates")["g"]
    c = by_name(doc, "dynamic_configs")["c"]
    assert (g["enabled"], g["rules"]) == (False, [])
    assert (c["enabled"], c["rules"], c["defaultValue"]) == (False, [], {"a": 0})


def test_a_launched_gate_is_one_public_launched_rule() -> None:
    doc = build(gates=[gate("g", [rule("r", [], 10)], isEnabled=False, _state={"launched": True})])
    spec = by_name(doc, "feature_gates")["g"]
    assert spec["enabled"] is True
    [only] = spec["rules"]
    assert (only["id"], only["passPercentage"], [c["type"] for c in only["conditions"]]) == (
        "launched",
        100,
        ["public"],
    )


def test_archived_entities_are_left_out() -> None:
    doc = build(
        gates=[gate("g", [], _state={"archived": True}), gate("kept", [])],
        experiments=[exp("e", "archived"), exp("e2", "active", _state={"archived": True})],
    )
    assert list(by_name(doc, "feature_gates")) == ["kept"]
    assert doc["dynamic_configs"] == []


def test_config_variants_are_one_rule_each_sharing_the_rule_salt() -> None:
    variants = [
        {"id": "va", "name": "a", "passPercentage": 25, "returnValue": {"p": 9}},
        {"id": "vb", "name": "b", "passPercentage": 75, "returnValue": {"p": 11}},
    ]
    cfg = {
        **gate("cfg", [rule("split", [], 80, returnValue={"p": 0}, variants=variants)]),
        "defaultValue": {"p": 10},
    }
    doc = build(configs=[cfg])
    rules = by_name(doc, "dynamic_configs")["cfg"]["rules"]
    assert [(r["id"], r["salt"], r["passPercentage"], r["returnValue"]) for r in rules] == [
        ("va", "split", 80, {"p": 9}),
        ("vb", "split", 80, {"p": 11}),
    ]
    bounds = [
        [(c["type"], c["operator"], c["targetValue"], c["additionalValues"]) for c in r["conditions"]]
        for r in rules
    ]
    assert bounds == [
        [("user_bucket", "lt", 250, {"salt": "split"})],
        [("user_bucket", "lt", 1000, {"salt": "split"})],
    ]
    ev = Evaluator(doc)
    answers = [ev.get_config({"userID": f"u{i}"}, "cfg") for i in range(2000)]
    assert {(a.rule_id, a.value["p"]) for a in answers} <= {("va", 9), ("vb", 11), ("va", 10), ("vb", 10)}
    # one pass decision per unit whichever variant: 80% get a variant's value, split 25/75
    passed = [a for a in answers if a.value["p"] != 10]
    assert stats.binomtest(len(passed), len(answers), 0.80).pvalue > 0.001
    in_a = sum(a.rule_id == "va" for a in passed)
    assert stats.binomtest(in_a, len(passed), 0.25).pvalue > 0.001


# --- experiments ---------------------------------------------------------------------------------


def _rule_ids(doc: dict[str, Any], name: str) -> list[str]:
    return [r["id"] for r in by_name(doc, "dynamic_configs")[name]["rules"]]


def test_experiment_statuses() -> None:
    doc = build(
        experiments=[
            exp("setup", "setup"),
            exp("active", "active"),
            exp("decided", "decision_made", launchedGroupID="decided.g1"),
            exp("abandoned", "abandoned"),
            exp("gone", "archived"),
        ]
    )
    configs = by_name(doc, "dynamic_configs")
    assert set(configs) == {"setup", "active", "decided", "abandoned"}
    assert _rule_ids(doc, "setup") == ["prestart"]
    assert _rule_ids(doc, "active") == ["active.g0", "active.g1"]
    assert _rule_ids(doc, "decided") == ["launchedGroup"]
    launched = configs["decided"]["rules"][0]
    assert (launched["returnValue"], launched["groupName"], launched["isExperimentGroup"]) == (
        {"v": 1},
        "G1",
        False,
    )
    assert _rule_ids(doc, "abandoned") == ["abandoned"]
    assert [c["isActive"] for c in (configs[n] for n in ("setup", "active", "decided", "abandoned"))] == [
        False,
        True,
        False,
        False,
    ]
    assert all(configs[n]["entity"] == "experiment" for n in configs)


def test_active_groups_use_cumulative_user_buckets_on_the_experiment_salt() -> None:
    doc = build(experiments=[exp("three", "active", (34, 33, 33))])
    spec = by_name(doc, "dynamic_configs")["three"]
    assert [r["id"] for r in spec["rules"]] == ["three.g0", "three.g1", "three.g2"]
    assert all(r["isExperimentGroup"] for r in spec["rules"])
    assert [r["returnValue"] for r in spec["rules"]] == [{"v": 0}, {"v": 1}, {"v": 2}]
    conds = [r["conditions"] for r in spec["rules"]]
    assert [
        [(c["type"], c["operator"], c["targetValue"], c["additionalValues"]) for c in cs] for cs in conds
    ] == [
        [("user_bucket", "lt", 340, {"salt": "three"})],
        [("user_bucket", "lt", 670, {"salt": "three"})],
        [("user_bucket", "lt", 1000, {"salt": "three"})],
    ]
    assert spec["explicitParameters"] == ["v"]


def test_targeting_gate_and_inline_targeting_come_before_the_groups() -> None:
    inline = [rule("t1", [{"type": "country", "operator": "any", "targetValue": ["DE"]}])]
    doc = build(experiments=[exp("e", "active", targetingGateID="tg", inlineTargetingRules=inline)])
    assert _rule_ids(doc, "e") == ["targetingGate", "inlineTargeting", "e.g0", "e.g1"]
    rules = by_name(doc, "dynamic_configs")["e"]["rules"]
    assert (
        rules[0]["conditions"][0]["type"] == "fail_gate" and rules[0]["conditions"][0]["targetValue"] == "tg"
    )
    assert rules[1]["conditions"][0]["targetValue"] == "targeting:e"
    targeting = by_name(doc, "feature_gates")["targeting:e"]
    assert targeting["rules"][0]["conditions"][0]["type"] == "ip_based"


def test_a_disabled_group_sends_its_units_to_the_default() -> None:
    e = exp("e", "active")
    e["groups"][1]["disabled"] = True
    rules = by_name(build(experiments=[e]), "dynamic_configs")["e"]["rules"]
    assert [(r["id"], r["isExperimentGroup"], r["returnValue"]) for r in rules] == [
        ("e.g0", True, {"v": 0}),
        ("e.g1:disabled", False, {}),
    ]


# --- layers --------------------------------------------------------------------------------------


LAYER = {"id": "L", "idType": "userID", "parameters": [{"name": "v", "defaultValue": -1}]}


def test_listed_user_buckets_are_kept_and_allocations_take_free_buckets_in_start_order() -> None:
    listed = exp("listed", "active", layerID="L", userBuckets=[0, 1, 2, 500])
    first = exp("first", "active", layerID="L", allocation=1, startTime=100)
    second = exp("second", "active", layerID="L", allocation=0.5, startTime=200)
    out = specs.layer_buckets("L", [second, listed, first])
    assert out["listed"] == [0, 1, 2, 500]
    assert out["first"] == list(range(3, 13))
    assert out["second"] == list(range(13, 18))


def test_a_running_experiment_keeps_its_buckets_when_another_joins() -> None:
    running = exp("running", "active", layerID="L", allocation=30, startTime=100)
    before = specs.layer_buckets("L", [running])["running"]
    joined = exp("joined", "active", layerID="L", allocation=20, startTime=50_000)
    setup = exp("later", "setup", layerID="L", allocation=50)  # holds no buckets yet
    after = specs.layer_buckets("L", [joined, setup, running])
    assert after["running"] == before == list(range(300))
    assert after["joined"] == list(range(300, 500))
    assert "later" not in after


def test_layer_rules_delegate_to_the_experiments_holding_buckets() -> None:
    a = exp("a", "active", layerID="L", allocation=40, startTime=1)
    b = exp("b", "active", layerID="L", allocation=40, startTime=2)
    doc = build(layers=[LAYER], experiments=[a, b])
    layer = by_name(doc, "layer_configs")["L"]
    assert layer["defaultValue"] == {"v": -1}
    assert [(r["id"], r["configDelegate"]) for r in layer["rules"]] == [
        ("layerAssignment:a", "a"),
        ("layerAssignment:b", "b"),
    ]
    assert layer["rules"][1]["conditions"][0]["targetValue"] == list(range(400, 800))
    assert doc["layers"] == {"L": ["a", "b"]}
    # The experiment itself excludes units outside its buckets of the layer (salt = the layer id).
    a_spec = by_name(doc, "dynamic_configs")["a"]
    first = a_spec["rules"][0]
    assert (first["id"], first["conditions"][0]["operator"], first["conditions"][0]["additionalValues"]) == (
        "layerAssignment",
        "none",
        {"salt": "L"},
    )
    assert a_spec["isInLayer"] is True and a_spec["defaultValue"] == {"v": -1}


# --- holdouts and segments -----------------------------------------------------------------------


def test_holdouts_are_gates_and_held_entities_start_with_a_pass_gate_rule() -> None:
    holdout = {
        "id": "h",
        "idType": "userID",
        "passPercentage": 10,
        "isEnabled": True,
        "gateIDs": ["g"],
        "experimentIDs": ["e"],
        "createdTime": 0,
    }
    doc = build(gates=[gate("g", [rule("r", [])])], experiments=[exp("e", "active")], holdouts=[holdout])
    gates_by_name = by_name(doc, "feature_gates")
    h = gates_by_name["holdout:h"]
    assert (h["entity"], h["rules"][-1]["passPercentage"]) == ("holdout", 10)
    g_first = gates_by_name["g"]["rules"][0]
    e_first = by_name(doc, "dynamic_configs")["e"]["rules"][0]
    for first in (g_first, e_first):
        assert first["id"] == "holdout:h"
        assert [(c["type"], c["targetValue"]) for c in first["conditions"]] == [("pass_gate", "holdout:h")]
    assert g_first["passPercentage"] == 0  # a held-out unit fails the gate
    assert e_first["returnValue"] == {} and e_first.get("isExperimentGroup") is None


def test_a_global_holdout_holds_entities_created_after_it() -> None:
    holdout = {"id": "h", "passPercentage": 5, "isEnabled": True, "isGlobal": True, "createdTime": 1000}
    doc = build(
        gates=[gate("old", [], createdTime=500), gate("new", [], createdTime=2000)], holdouts=[holdout]
    )
    gates_by_name = by_name(doc, "feature_gates")
    assert [r["id"] for r in gates_by_name["old"]["rules"]] == []
    assert [r["id"] for r in gates_by_name["new"]["rules"]] == ["holdout:h"]


def test_segments_are_segment_gates() -> None:
    rule_based = {"id": "corp", "type": "rule_based", "rules": [rule("r", [{"type": "public"}], 50)]}
    id_list = {"id": "vips", "type": "id_list", "idType": "userID"}
    doc = build(segments=[rule_based, id_list])
    gates_by_name = by_name(doc, "feature_gates")
    corp, vips = gates_by_name["segment:corp"], gates_by_name["segment:vips"]
    assert (corp["entity"], [r["passPercentage"] for r in corp["rules"]]) == ("segment", [50])
    [only] = vips["rules"]
    assert [(c["type"], c["operator"], c["targetValue"]) for c in only["conditions"]] == [
        ("unit_id", "in_segment_list", "vips")
    ]
    assert doc["id_lists"] == {"vips": True}


# --- gate check statistics -----------------------------------------------------------------------


def _hour(ms: int) -> str:
    from expconsole.store.gate_checks import hour_of

    return hour_of(ms)


def test_check_staleness() -> None:
    young = NOW - 2 * DAY_MS  # created
    old = NOW - 30 * DAY_MS
    assert gates.check_staleness(old, Usage(), NOW) == "STALE_EMPTY_CHECKS"
    assert gates.check_staleness(young, Usage(), NOW) is None
    recent = Usage(checks=5, last_checked=_hour(NOW - 3_600_000), first_checked=_hour(NOW - 20 * DAY_MS))
    assert gates.check_staleness(old, recent, NOW) is None
    dead = Usage(checks=0, last_checked=_hour(NOW - 8 * DAY_MS), first_checked=_hour(NOW - 20 * DAY_MS))
    assert gates.check_staleness(old, dead, NOW) == "STALE_PROBABLY_DEAD_CHECK"
    six_days = Usage(checks=0, last_checked=_hour(NOW - 6 * DAY_MS))
    assert gates.check_staleness(old, six_days, NOW) is None


def test_pass_rate_is_sampled_from_checks_when_there_are_any() -> None:
    def stored(percent: float) -> StoredGate:
        everyone = {"id": "r", "baseID": "r", "name": "r", "conditions": [], "environments": None}
        return StoredGate.read({**STORED, "rules": [{**everyone, "passPercentage": percent}], "_state": {}})

    rollout = stored(30)
    assert gates.pass_rate(rollout, Usage()) == "INBETWEEN"  # from the configuration
    assert gates.pass_rate(rollout, Usage(checks=10, passes=0)) == "0"
    assert gates.pass_rate(rollout, Usage(checks=10, passes=10)) == "100"
    assert gates.pass_rate(rollout, Usage(checks=10, passes=3)) == "INBETWEEN"
    everyone = stored(100)
    assert gates.pass_rate(everyone, Usage()) == "100"
