"""The real Statsig SDKs evaluate what the console manages, through the local server.

Entities are created through the console API only; the SDKs (`statsig`, pure Python, and
`statsig-python-core`, the Rust core) download the spec document the console built, the id lists
and log their events to it, with every other host unreachable. For 2,000 varied users both SDKs,
our evaluator (on the document and id lists served, in-process) and, for a sample, our evaluation
endpoints over HTTP must agree on every value and rule id; the observed splits of a 30% rollout
and of 34/33/33 groups over 10,000 users must pass a binomial / chi-square test against their sizes.

The agreement's coverage lies in the variety of the users and entities, not in their count: every
user shape `users()` draws (each attribute present or absent, each of its values) occurs many
times among 2,000 users, and the test asserts that every gate's own rule is reached by someone,
so a population too small to exercise a condition fails rather than passing unexamined.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from scipy import stats

from expconsole.services.sdk.evaluator import Evaluator
from tests.e2e.client import ApiClient
from tests.e2e.sdk_clients import (
    core_sdk,
    core_user,
    pure_sdk,
    pure_user,
    served_id_lists,
    users,
    wait_for_document,
)

USERS = 2_000  # the agreement: enough for every user shape and every gate's rule (asserted)
SPLIT_USERS = 10_000  # the splits: one gate and one experiment per user, the binomial test's power
HTTP_SAMPLE = 25
P = "sdkp_"  # id prefix: this module's entities, in a server shared by the worker's tests


def cond(ctype: str, operator: str | None = None, target: Any = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ctype}
    if operator is not None:
        out["operator"] = operator
    if target is not None:
        out["targetValue"] = target
    out.update(extra)
    return out


# One gate per condition type and operator family (each a single rule, 100%).
GATE_CONDITIONS: dict[str, list[dict[str, Any]]] = {
    "user_id_any": [cond("user_id", "any", [f"user-{i}" for i in range(0, 10_000, 11)])],
    "user_id_none": [cond("user_id", "none", ["user-1", "user-2"])],
    "email_ends": [cond("email", "str_ends_with_any", ["@corp.io", "@EXAMPLE.com"])],
    "email_starts": [cond("email", "str_starts_with_any", ["ann", "Bob"])],
    "email_contains_none": [cond("email", "str_contains_none", ["mail"])],
    "email_regex": [cond("email", "str_matches", r"^[ab].*@example\.(com|org)$")],
    "email_eq": [cond("email", "eq", "ann0@corp.io")],
    "age_gt": [cond("custom_field", "gt", 30, field="age")],
    "age_lte": [cond("custom_field", "lte", 25.5, field="age")],
    "plan_neq": [cond("custom_field", "neq", "free", field="plan")],
    "plan_case_sensitive": [cond("custom_field", "any_case_sensitive", ["pro"], field="plan")],
    "app_version_gt": [cond("app_version", "version_gt", "1.2.0")],
    "app_version_lte": [cond("app_version", "version_lte", "2.0")],
    "app_version_eq": [cond("app_version", "version_eq", "2.1")],
    "browser_chrome": [cond("browser_name", "any", ["Chrome", "Chrome Mobile"])],
    "browser_version_gte": [cond("browser_version", "version_gte", "116")],
    "os_ios_or_mac": [cond("os_name", "any", ["iOS", "Mac OS X"])],
    "os_version_lt": [cond("os_version", "version_lt", "14")],
    "country_de_us": [cond("country", "any", ["DE", "US"])],
    "locale_en": [cond("locale", "str_starts_with_any", ["en"])],
    "tier_staging": [cond("environment_tier", "any", ["staging"])],
    "ip_listed": [cond("ip_address", "any", ["8.8.8.8", "1.0.16.1"])],
    "company_unit": [cond("unit_id", "any", ["c1", "c3", "c5"], customID="companyID")],
    "after_2020": [cond("time", "after", 1_577_836_800_000)],
    "before_2020": [cond("time", "before", 1_577_836_800_000)],
    "passes_age_gt": [cond("passes_gate", target=f"{P}age_gt")],
    "fails_plan_neq": [cond("fails_gate", target=f"{P}plan_neq")],
    "in_rule_segment": [cond("passes_segment", target=f"{P}seg_rules")],
    "not_in_id_segment": [cond("fails_segment", target=f"{P}seg_ids")],
    "url_contains": [cond("url", "str_contains_any", ["/checkout"])],
    "target_app": [cond("target_app", "any", ["web"])],
}


def _ok(response: requests.Response) -> dict[str, Any]:
    assert response.status_code in (200, 201), response.text
    return response.json()["data"]


def _started(api: ApiClient, exp_id: str) -> None:
    _ok(api.put(f"/console/v1/experiments/{exp_id}/start", json={}))


def create_world(api: ApiClient) -> dict[str, Any]:
    """Everything the issue names, created through the console API."""
    _ok(api.post("/console/v1/segments", json={"name": f"{P}seg ids", "type": "id_list"}))
    ids = [f"user-{i}" for i in range(0, 10_000, 5)]
    for start in range(0, len(ids), 1000):
        r = api.patch(f"/console/v1/segments/{P}seg_ids/id_list", json={"ids": ids[start : start + 1000]})
        assert r.status_code == 200, r.text
    rule = {
        "name": "corp",
        "passPercentage": 100,
        "conditions": [cond("email", "str_ends_with_any", ["@corp.io"])],
    }
    _ok(
        api.post(
            "/console/v1/segments", json={"name": f"{P}seg rules", "type": "rule_based", "rules": [rule]}
        )
    )
    gates = []
    for name, conditions in GATE_CONDITIONS.items():
        body = {
            "name": f"{P}{name}",
            "rules": [{"name": name, "passPercentage": 100, "conditions": conditions}],
        }
        gates.append(_ok(api.post("/console/v1/gates", json=body))["id"])
    rollout = {
        "name": f"{P}rollout 30",
        "rules": [{"name": "thirty", "passPercentage": 30, "conditions": []}],
    }
    gates.append(_ok(api.post("/console/v1/gates", json=rollout))["id"])
    staged = {
        "name": f"{P}staged",
        "rules": [
            {"name": "staging", "passPercentage": 100, "conditions": [], "environments": ["staging"]},
            {
                "name": "half",
                "passPercentage": 50,
                "conditions": [cond("email", "str_contains_any", ["example"])],
            },
        ],
    }
    gates.append(_ok(api.post("/console/v1/gates", json=staged))["id"])
    disabled = {
        "name": f"{P}disabled",
        "isEnabled": False,
        "rules": [{"name": "all", "passPercentage": 100, "conditions": []}],
    }
    gates.append(_ok(api.post("/console/v1/gates", json=disabled))["id"])
    launched = _ok(api.post("/console/v1/gates", json={**rollout, "name": f"{P}launched"}))["id"]
    _ok(api.put(f"/console/v1/gates/{launched}/launch"))
    gates.append(launched)

    config = {
        "name": f"{P}pricing",
        "defaultValue": {"price": 10},
        "rules": [
            {
                "name": "pros",
                "passPercentage": 80,
                "conditions": [cond("custom_field", "any", ["pro"], field="plan")],
                "returnValue": {"price": 8},
            },
            {
                "name": "split",
                "passPercentage": 100,
                "conditions": [],
                "returnValue": {"price": 0},
                "variants": [
                    {"name": "a", "passPercentage": 25, "returnValue": {"price": 9}},
                    {"name": "b", "passPercentage": 75, "returnValue": {"price": 11}},
                ],
            },
        ],
    }
    configs = [_ok(api.post("/console/v1/dynamic_configs", json=config))["id"]]

    layer = {
        "name": f"{P}layer",
        "idType": "userID",
        "parameters": [
            {"name": "color", "type": "string", "defaultValue": "grey"},
            {"name": "size", "type": "number", "defaultValue": 1},
        ],
    }
    layer_id = _ok(api.post("/console/v1/layers", json=layer))["id"]
    layer_exps = []
    for n, color in enumerate(["red", "blue"]):
        body = {
            "name": f"{P}layer exp {n}",
            "layerID": layer_id,
            "allocation": 40,
            "groups": [
                {"name": "Control", "size": 50, "parameterValues": {"color": "grey"}},
                {"name": "Test", "size": 50, "parameterValues": {"color": color}},
            ],
        }
        exp_id = _ok(api.post("/console/v1/experiments", json=body))["id"]
        _started(api, exp_id)
        layer_exps.append(exp_id)

    three = {
        "name": f"{P}three",
        "targetingGateID": f"{P}locale_en",
        "groups": [
            {"name": "Control", "size": 34, "parameterValues": {"v": 0}},
            {"name": "Test A", "size": 33, "parameterValues": {"v": 1}},
            {"name": "Test B", "size": 33, "parameterValues": {"v": 2}},
        ],
    }
    three_id = _ok(api.post("/console/v1/experiments", json=three))["id"]
    _started(api, three_id)
    holdout = {"name": f"{P}holdout", "passPercentage": 10, "experimentIDs": [layer_exps[0]]}
    _ok(api.post("/console/v1/holdouts", json=holdout))
    setup_only = {"name": f"{P}not started", "groups": [{"name": "C", "size": 50}, {"name": "T", "size": 50}]}
    experiments = [three_id, *layer_exps, _ok(api.post("/console/v1/experiments", json=setup_only))["id"]]
    return {
        "gates": gates,
        "configs": configs,
        "experiments": experiments,
        "layers": [layer_id],
        "three": three_id,
        "id_segment_members": set(ids),
    }


@pytest.fixture(scope="module")
def world(server: Any) -> Iterator[dict[str, Any]]:
    with ApiClient(server.url, server.api_key) as api:
        made = create_world(api)
    names = made["gates"] + made["configs"] + made["experiments"] + made["layers"]
    made["doc"] = wait_for_document(server.url, server.server_secret, names)
    yield made


@pytest.fixture(scope="module")
def sdks(server: Any, world: dict[str, Any]) -> Iterator[tuple[Any, Any]]:
    with (
        pure_sdk(server.url, server.server_secret) as pure,
        core_sdk(server.url, server.server_secret) as core,
    ):
        yield pure, core


def answers_pure(sdk: Any, user: dict[str, Any], w: dict[str, Any]) -> dict[tuple[str, str], Any]:
    u = pure_user(user)
    out: dict[tuple[str, str], Any] = {}
    for name in w["gates"]:
        r = sdk.get_feature_gate(u, name, log_exposure=False)
        out["gate", name] = (r.value, r.rule_id)
    for name in w["configs"] + w["experiments"]:
        r = sdk.get_experiment(u, name, log_exposure=False)
        out["config", name] = (r.value, r.rule_id)
    for name in w["layers"]:
        r = sdk.get_layer(u, name, log_exposure=False)
        out["layer", name] = (r.get_values(), r.rule_id, r.allocated_experiment or None)
    return out


def answers_core(sdk: Any, user: dict[str, Any], w: dict[str, Any]) -> dict[tuple[str, str], Any]:
    from statsig_python_core import (
        ExperimentEvaluationOptions,
        FeatureGateEvaluationOptions,
        LayerEvaluationOptions,
    )

    u = core_user(user)
    out: dict[tuple[str, str], Any] = {}
    for name in w["gates"]:
        r = sdk.get_feature_gate(u, name, FeatureGateEvaluationOptions(disable_exposure_logging=True))
        out["gate", name] = (r.value, r.rule_id)
    for name in w["configs"] + w["experiments"]:
        r = sdk.get_experiment(u, name, ExperimentEvaluationOptions(disable_exposure_logging=True))
        out["config", name] = (r.value, r.rule_id)
    for name in w["layers"]:
        r = sdk.get_layer(u, name, LayerEvaluationOptions(disable_exposure_logging=True))
        out["layer", name] = (r.get_value(), r.rule_id, r.allocated_experiment_name or None)
    return out


def answers_ours(ev: Evaluator, user: dict[str, Any], w: dict[str, Any]) -> dict[tuple[str, str], Any]:
    out: dict[tuple[str, str], Any] = {}
    for name in w["gates"]:
        r = ev.check_gate(user, name)
        out["gate", name] = (r.value, r.rule_id)
    for name in w["configs"] + w["experiments"]:
        c = ev.get_config(user, name)
        out["config", name] = (c.value, c.rule_id)
    for name in w["layers"]:
        layer = ev.get_layer(user, name)
        out["layer", name] = (layer.value, layer.rule_id, layer.allocated_experiment or None)
    return out


def _differences(
    expected: dict[Any, Any], actual: dict[Any, Any], who: str, user: dict[str, Any]
) -> list[str]:
    return [
        f"{who} {k} for {user}: {expected[k]!r} vs ours {actual.get(k)!r}"
        for k in expected
        if expected[k] != actual.get(k)
    ]


def test_the_sdks_our_evaluator_and_the_endpoints_agree_for_varied_users(
    server: Any, world: dict[str, Any], sdks: tuple[Any, Any]
) -> None:
    pure, core = sdks
    ev = Evaluator(world["doc"], served_id_lists(server.url, server.server_secret))
    population = users(USERS)
    differences: list[str] = []
    reached: Counter[str] = Counter()
    for user in population:
        ours = answers_ours(ev, user, world)
        differences += _differences(answers_pure(pure, user, world), ours, "statsig", user)
        differences += _differences(answers_core(core, user, world), ours, "statsig-python-core", user)
        reached.update(f"{kind}:{name}:{answer[1]}" for (kind, name), answer in ours.items())
    assert differences == [], f"{len(differences)} differences, first: {differences[:5]}"
    # Every gate's own rule is reached by someone (so the equality covers both sides of each
    # condition), except where nobody can pass: the time is after 2020, and a server secret has no
    # target app (the SDKs then read none).
    unreached = {
        spec["name"]
        for spec in world["doc"]["feature_gates"]
        if spec["name"] in world["gates"]
        and spec["enabled"]
        and spec["rules"]
        and not reached[f"gate:{spec['name']}:{spec['rules'][-1]['id']}"]
    }
    assert unreached == {f"{P}before_2020", f"{P}target_app"}

    headers = {"STATSIG-API-KEY": server.server_secret}
    for user in population[:HTTP_SAMPLE]:
        ours = answers_ours(ev, user, world)
        r = requests.post(
            f"{server.url}/v1/check_gate",
            json={"user": user, "gateNames": world["gates"]},
            headers=headers,
            timeout=10,
        )
        assert r.status_code == 200, r.text
        for name, answer in r.json().items():
            assert (answer["value"], answer["rule_id"]) == ours["gate", name], (name, user)
        for name in world["configs"] + world["experiments"]:
            path, field = (
                ("get_experiment", "experimentName")
                if name in world["experiments"]
                else ("get_config", "configName")
            )
            answer = requests.post(
                f"{server.url}/v1/{path}", json={"user": user, field: name}, headers=headers, timeout=10
            ).json()
            assert (answer["value"], answer["rule_id"]) == ours["config", name], (name, user, answer)
        for name in world["layers"]:
            answer = requests.post(
                f"{server.url}/v1/get_layer",
                json={"user": user, "layerName": name},
                headers=headers,
                timeout=10,
            ).json()
            assert (answer["value"], answer["rule_id"], answer["allocated_experiment_name"]) == ours[
                "layer", name
            ]


def test_rollout_and_group_splits_follow_their_sizes(world: dict[str, Any], sdks: tuple[Any, Any]) -> None:
    pure, _core = sdks
    population = [pure_user(u) for u in users(SPLIT_USERS, seed=99)]
    passed = sum(pure.get_feature_gate(u, f"{P}rollout_30", log_exposure=False).value for u in population)
    assert stats.binomtest(passed, len(population), 0.30).pvalue > 0.001, passed

    groups = Counter(
        pure.get_experiment(u, world["three"], log_exposure=False).group_name for u in population
    )
    assigned = [groups["Control"], groups["Test A"], groups["Test B"]]
    assert sum(assigned) > 1000  # the targeting gate (English locales) lets a good share in
    assert stats.chisquare(assigned, [sum(assigned) * p for p in (0.34, 0.33, 0.33)]).pvalue > 0.001, assigned


def test_console_keys_and_missing_keys_are_refused(server: Any, world: dict[str, Any]) -> None:
    url = f"{server.url}/v1/download_config_specs/{server.server_secret}.json"
    assert requests.get(url, headers={"STATSIG-API-KEY": server.api_key}, timeout=10).status_code == 403
    assert requests.get(url, timeout=10).status_code == 401
    assert requests.get(url, headers={"SERVICE-API-KEY": server.server_secret}, timeout=10).status_code == 200


def test_downloads_are_gzip_with_etag_and_unchanged_since_time(server: Any, world: dict[str, Any]) -> None:
    key = server.server_secret
    url = f"{server.url}/v1/download_config_specs/{key}.json"
    first = requests.get(
        url, headers={"STATSIG-API-KEY": key, "Accept-Encoding": "gzip"}, timeout=10, stream=True
    )
    assert first.headers["Content-Encoding"] == "gzip"
    raw = first.raw.read()
    assert {g["name"] for g in json.loads(gzip.decompress(raw))["feature_gates"]} >= set(world["gates"])
    etag = first.headers["ETag"]
    again = requests.get(url, headers={"STATSIG-API-KEY": key, "If-None-Match": etag}, timeout=10)
    assert again.status_code == 304
    current = requests.get(url, headers={"STATSIG-API-KEY": key}, timeout=10).json()
    unchanged = requests.get(
        url, params={"sinceTime": current["time"]}, headers={"STATSIG-API-KEY": key}, timeout=10
    )
    assert unchanged.json() == {"has_updates": False, "time": current["time"]}
    bad = requests.get(url, params={"sinceTime": "soon"}, headers={"STATSIG-API-KEY": key}, timeout=10)
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"] == "sinceTime"
