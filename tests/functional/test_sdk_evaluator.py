"""Our Statsig spec evaluator answers like the real SDKs, unit by unit.

Both SDKs (`statsig`, pure Python; `statsig-python-core`, the Rust core) download the same
document from a loopback server (v1 and its `v1_to_v2` conversion, id lists as files) and
evaluate 3,000 varied users; our `Evaluator` must give the same value and rule id for every
user and every gate, config, experiment and layer, and the same exposure events as the SDK logs.

The coverage lies in the users' variety (every attribute sometimes present, sometimes not) and the
document's specs, not in the count: the test asserts that every gate's condition is both met and
missed, and every experiment group and layer allocation reached, so a population too small to
exercise one fails. The splits' statistical test keeps its 20,000 users.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

import pytest
from scipy import stats

from expconsole.services.sdk.evaluator import Evaluator
from expconsole.services.sdk.hashing import id_list_hash
from expconsole.services.sdk.ua import country_of_ip
from tests.e2e.sdk_clients import core_user as _core_user
from tests.e2e.sdk_clients import pure_user as _pure_user
from tests.functional.sdk_loopback import SDK_KEY, core_sdk, loopback, pure_sdk
from tests.functional.sdk_specs import (
    CORE_DIFFERS,
    ID_LISTS,
    LAYER,
    PUBLIC,
    edge_document,
    main_document,
    users,
)

USERS = 3_000  # enough for both sides of every condition and every group (asserted below)


def _hashed_lists() -> dict[str, set[str]]:
    return {name: {id_list_hash(member) for member in members} for name, members in ID_LISTS.items()}


def _names(doc: dict[str, Any]) -> tuple[list[str], list[str], list[str]]:
    gates = [spec["name"] for spec in doc["feature_gates"]] + ["no_such_gate"]
    configs = [spec["name"] for spec in doc["dynamic_configs"]] + ["no_such_config"]
    layers = [spec["name"] for spec in doc["layer_configs"]] + ["no_such_layer"]
    return gates, configs, layers


def _ours(evaluator: Evaluator, user: dict[str, Any], doc: dict[str, Any]) -> dict[tuple[str, str], Any]:
    gates, configs, layers = _names(doc)
    answers: dict[tuple[str, str], Any] = {}
    for name in gates:
        result = evaluator.check_gate(user, name)
        answers["gate", name] = (result.value, result.rule_id)
    for name in configs:
        result = evaluator.get_experiment(user, name)
        answers["config", name] = (result.value, result.rule_id, result.group_name)
        answers["config_exposures", name] = result.secondary_exposures
    for name in layers:
        result = evaluator.get_layer(user, name)
        answers["layer", name] = (result.value, result.rule_id, result.allocated_experiment)
    return answers


def _pure(sdk: Any, user: dict[str, Any], doc: dict[str, Any]) -> dict[tuple[str, str], Any]:
    gates, configs, layers = _names(doc)
    statsig_user = _pure_user(user)
    answers: dict[tuple[str, str], Any] = {}
    for name in gates:
        result = sdk.get_feature_gate(statsig_user, name, log_exposure=False)
        answers["gate", name] = (result.value, result.rule_id)
    for name in configs:
        result = sdk.get_experiment(statsig_user, name, log_exposure=False)
        answers["config", name] = (result.value, result.rule_id, result.group_name)
        answers["config_exposures", name] = result.secondary_exposures
    for name in layers:
        result = sdk.get_layer(statsig_user, name, log_exposure=False)
        answers["layer", name] = (result.get_values(), result.rule_id, result.allocated_experiment)
    return answers


def _core(sdk: Any, user: dict[str, Any], doc: dict[str, Any]) -> dict[tuple[str, str], Any]:
    from statsig_python_core import (
        ExperimentEvaluationOptions,
        FeatureGateEvaluationOptions,
        LayerEvaluationOptions,
    )

    gates, configs, layers = _names(doc)
    core_user = _core_user(user)
    answers: dict[tuple[str, str], Any] = {}
    gate_options = FeatureGateEvaluationOptions(disable_exposure_logging=True)
    for name in gates:
        result = sdk.get_feature_gate(core_user, name, gate_options)
        answers["gate", name] = (result.value, result.rule_id)
    experiment_options = ExperimentEvaluationOptions(disable_exposure_logging=True)
    for name in configs:
        result = sdk.get_experiment(core_user, name, experiment_options)
        answers["config", name] = (result.value, result.rule_id, result.group_name)
    layer_options = LayerEvaluationOptions(disable_exposure_logging=True)
    for name in layers:
        result = sdk.get_layer(core_user, name, layer_options)
        answers["layer", name] = (
            result.get_value(),
            result.rule_id,
            result.allocated_experiment_name or None,
        )
    return answers


def _disagreements(
    expected: dict[tuple[str, str], Any], actual: dict[tuple[str, str], Any], user: dict[str, Any]
) -> list[str]:
    return [
        f"{kind} {name} for {user}: SDK {expected[kind, name]!r}, ours {actual.get((kind, name))!r}"
        for kind, name in expected
        if expected[kind, name] != actual.get((kind, name))
    ]


@pytest.fixture(scope="module")
def served() -> Any:
    doc = main_document()
    with loopback(doc, ID_LISTS) as (base, state), pure_sdk(base) as pure, core_sdk(base) as core:
        yield doc, pure, core, state


def test_every_answer_equals_the_pure_sdk_and_the_rust_core_for_varied_users(served: Any) -> None:
    doc, pure, core, _state = served
    evaluator = Evaluator(doc, _hashed_lists())
    population = users(USERS)
    with_pure: list[str] = []
    with_core: list[str] = []
    rule_ids: Counter[str] = Counter()
    for user in population:
        ours = _ours(evaluator, user, doc)
        with_pure += _disagreements(_pure(pure, user, doc), ours, user)
        core_answers = _core(core, user, doc)
        with_core += _disagreements(core_answers, ours, user)
        rule_ids.update(
            f"{kind}:{name}:{answer[1]}"
            for (kind, name), answer in ours.items()
            if kind in ("gate", "config", "layer")
        )
    assert with_pure == [], f"{len(with_pure)} differences from statsig, first: {with_pure[:5]}"
    assert with_core == [], f"{len(with_core)} differences from statsig-python-core, first: {with_core[:5]}"
    # The population meets each gate's condition and misses it, so the equality above covers both
    # sides of every condition, not only defaults (but those whose answer no user attribute moves).
    independent = {"g_time_after", "g_time_before", "g_target_app_any", "g_target_app_none"}
    for spec in doc["feature_gates"]:
        first = spec["rules"][0]["conditions"] if spec["rules"] else [PUBLIC]
        if spec["enabled"] and first != [PUBLIC] and spec["name"] not in independent:
            met = rule_ids[f"gate:{spec['name']}:{spec['rules'][0]['id']}"]
            assert 0 < met < USERS, spec["name"]
    for group in ("checkout_exp_group0", "checkout_exp_group1", "checkout_exp_group2", "holdout_q4_rule"):
        assert rule_ids[f"config:checkout_exp:{group}"] > 0
    for group in ("layer_exp1_group0", "layer_exp2_group1", "default"):
        assert rule_ids[f"layer:{LAYER}:{group}"] > 0


def test_exposure_events_equal_what_the_pure_sdk_logs(served: Any) -> None:
    """Gate, config and layer exposures: same names, metadata, secondary exposures and user."""
    doc, pure, _core_sdk, state = served
    evaluator = Evaluator(doc, _hashed_lists())
    ignored = {"serverTime", "configSyncTime", "initTime"}

    def comparable(event: dict[str, Any]) -> dict[str, Any]:
        metadata = {key: value for key, value in event["metadata"].items() if key not in ignored}
        return {**event, "metadata": metadata, "time": None}

    ours: list[dict[str, Any]] = []
    for user in users(300, seed=99):
        statsig_user = _pure_user(user)
        pure.check_gate(statsig_user, "combined")
        pure.get_experiment(statsig_user, "checkout_exp")
        layer = pure.get_layer(statsig_user, LAYER)
        layer.get("button_color")
        layer.get("discount")
        ours += evaluator.exposure_events(user, evaluator.check_gate(user, "combined"))
        ours += evaluator.exposure_events(user, evaluator.get_experiment(user, "checkout_exp"))
        ours += evaluator.exposure_events(
            user, evaluator.get_layer(user, LAYER), ["button_color", "discount"]
        )
    pure.flush()
    deadline = time.monotonic() + 20
    logged = [event for event in state.events if event["eventName"].endswith("_exposure")]
    while len(logged) < len(ours) and time.monotonic() < deadline:
        time.sleep(0.1)
        logged = [event for event in state.events if event["eventName"].endswith("_exposure")]
    assert len(logged) == len(ours) == 1200
    # The SDK flushes batches from several threads, so compare the events in a canonical order.
    assert sorted(map(_canonical, map(comparable, logged))) == sorted(map(_canonical, map(comparable, ours)))
    names = Counter(event["eventName"] for event in ours)
    assert names == {
        "statsig::gate_exposure": 300,
        "statsig::config_exposure": 300,
        "statsig::layer_exposure": 600,
    }
    explicit = [event for event in ours if event["metadata"].get("isExplicitParameter") == "true"]
    assert explicit and all(
        event["metadata"]["allocatedExperiment"] in ("layer_exp1", "layer_exp2") for event in explicit
    )
    assert all(event["user"]["statsigEnvironment"]["tier"] for event in ours)
    assert not any("privateAttributes" in event["user"] for event in ours)


def test_error_paths_equal_the_pure_sdk() -> None:
    """Unsupported specs, exceptions inside a rule and a missing referenced gate, as the SDK answers."""
    doc = edge_document()
    evaluator = Evaluator(doc, _hashed_lists())
    population = users(1_000, seed=5)
    for index, user in enumerate(population):
        # Half text (`gt` and `after` raise in the SDK), half digits (they compare).
        user["custom"] = {**user.get("custom", {}), "nickname": "zed" if index % 2 else user["userID"][-2:]}
    edge_gates = [
        *(f"g_{key}" for key in CORE_DIFFERS),
        "unsupported_op",
        "unsupported_type",
        "gt_on_text",
        "bad_regex",
        "missing_ref",
        "tier_case",
        "date_text",
        "upper_op",
        "nested_error",
    ]
    seen: Counter[tuple[str, str]] = Counter()
    with loopback(doc, ID_LISTS) as (base, _state), pure_sdk(base) as pure:
        for user in population:
            statsig_user = _pure_user(user)
            for name in edge_gates:
                expected = pure._evaluator.check_gate(_with_default_tier(statsig_user), name)
                ours = evaluator.check_gate(user, name)
                assert (ours.value, ours.rule_id, ours.secondary_exposures) == (
                    expected.boolean_value,
                    expected.rule_id,
                    expected.secondary_exposures,
                ), (name, user)
                seen[name, ours.rule_id] += 1
    assert seen["unsupported_op", ""] == seen["unsupported_type", ""] == 1_000
    assert seen["gt_on_text", "error"] > 0 and seen["bad_regex", "error"] > 0
    assert seen["missing_ref", "default"] == 1_000


def _canonical(event: dict[str, Any]) -> str:
    return json.dumps(event, sort_keys=True)


def _with_default_tier(user: Any) -> Any:
    """The SDK server fills the document's default tier before evaluating; its evaluator does not."""
    import dataclasses

    if user._statsig_environment is None:
        return dataclasses.replace(user, _statsig_environment={"tier": "production"})
    return user


def test_rollout_and_group_splits_match_their_sizes() -> None:
    """A 30% rollout and 34/33/33 groups over 20,000 users: binomial and chi-square tests."""
    evaluator = Evaluator(main_document(), _hashed_lists())
    population = [{"userID": f"split-{i}"} for i in range(20_000)]
    passed = sum(evaluator.check_gate(user, "rollout_30").value for user in population)
    assert stats.binomtest(passed, len(population), 0.30).pvalue > 0.001
    groups: Counter[str] = Counter()
    held_out = 0
    for user in population:
        result = evaluator.get_experiment(user, "checkout_exp")
        held_out += result.rule_id == "holdout_q4_rule"
        if result.is_experiment_group:
            groups[result.group_name] += 1
    # The 10% holdout's rule comes first, then targeting; the users left are split into groups.
    assert stats.binomtest(held_out, len(population), 0.10).pvalue > 0.001
    observed = [groups["Group 0"], groups["Group 1"], groups["Group 2"]]
    total = sum(observed)
    assert total > 5_000
    expected = [total * 0.34, total * 0.33, total * 0.33]
    assert stats.chisquare(observed, expected).pvalue > 0.001


def test_a_disabled_spec_answers_disabled_in_both_sdks_only_without_rules(served: Any) -> None:
    """v1_to_v2 serves a disabled spec without rules: the Rust core would otherwise evaluate them."""
    _doc, pure, core, state = served
    from statsig_python_core import FeatureGateEvaluationOptions

    assert any(path.startswith(f"/v2/download_config_specs/{SDK_KEY}.json") for path in state.paths)
    options = FeatureGateEvaluationOptions(disable_exposure_logging=True)
    for user in users(50):
        assert (
            pure.get_feature_gate(_pure_user(user), "disabled_gate", log_exposure=False).rule_id == "disabled"
        )
        assert core.get_feature_gate(_core_user(user), "disabled_gate", options).rule_id == "disabled"


def test_where_the_rust_core_differs_from_the_pure_sdk() -> None:
    """Recorded for the spec builder: statsig-python-core 0.24 answers these conditions otherwise.

    The console must not serve them where both SDKs are to agree (multi gates become one rule per
    gate, dates are milliseconds, `ip_based none` is avoided or paired with an IP presence check).
    """
    doc = edge_document()
    population = users(500, seed=7)
    from statsig_python_core import FeatureGateEvaluationOptions

    options = FeatureGateEvaluationOptions(disable_exposure_logging=True)
    differing: Counter[str] = Counter()
    with loopback(doc, ID_LISTS) as (base, _state), pure_sdk(base) as pure, core_sdk(base) as core:
        for user in population:
            pure_user, core_user = _pure_user(user), _core_user(user)
            for name in (*(f"g_{key}" for key in CORE_DIFFERS), "g_email_any", "g_ip_country_any"):
                expected = pure.get_feature_gate(pure_user, name, log_exposure=False)
                actual = core.get_feature_gate(core_user, name, options)
                if (expected.value, expected.rule_id) != (actual.value, actual.rule_id):
                    differing[name] += 1
                    if name in ("g_multi_pass", "g_multi_fail"):
                        assert (actual.value, actual.rule_id) == (False, "")  # unsupported in the core
                    if name == "g_ip_country_none":
                        # Only users whose country is unknown (no IP, or one the table does not place).
                        assert "country" not in user
                        assert "ip" not in user or country_of_ip(user["ip"]) is None
    assert set(differing) == {f"g_{key}" for key in CORE_DIFFERS}
