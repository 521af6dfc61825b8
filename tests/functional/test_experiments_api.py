"""In-process tests of the experiment endpoints: create (every field, every limit at its edge), read,
full and partial update, delete, references, inline targeting, list filters, pagination and
versions.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_experiments.py`.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e.client import ApiClient, assert_error, country, error_for, rule, uid

EXPERIMENTS = "/console/v1/experiments"
GATES = "/console/v1/gates"
ASSIGNMENT_SOURCES = "/console/v1/experiments/assignment_sources"


class Console(ApiClient):
    """The console client with helpers for this file's resources."""

    def create(self, **fields: Any) -> dict[str, Any]:
        suffix = uid()
        body = {"name": f"exp {suffix}", "id": f"exp_{suffix}", **fields}
        resp = self.post(EXPERIMENTS, json=body)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    def experiment(self, exp_id: str) -> dict[str, Any]:
        resp = self.get(f"{EXPERIMENTS}/{exp_id}")
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def listing(self, **params: Any) -> dict[str, Any]:
        resp = self.get(EXPERIMENTS, params=params)
        assert resp.status_code == 200, resp.text
        return resp.json()

    def act(self, exp_id: str, action: str, body: Any = None, method: str = "PUT") -> dict[str, Any]:
        resp = self.call(method, f"{EXPERIMENTS}/{exp_id}/{action}", json=body)
        assert resp.status_code in (200, 201), resp.text
        return resp.json()["data"]

    def create_gate(self) -> str:
        suffix = uid()
        resp = self.post(GATES, json={"name": f"gate {suffix}", "id": f"gate_{suffix}"})
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]["id"]


@pytest.fixture(scope="module")
def console(app_api: ApiClient, app_ingest: ApiClient) -> Console:
    return Console(app_api.url, app_api.key, transport=app_api.transport)


def ids_of(listing: dict[str, Any]) -> set[str]:
    return {e["id"] for e in listing["data"]}


def metric(name: str = "purchase", type_: str = "event_count", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **extra}


def groups(*sizes: float, names: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    names = names or tuple(f"group {i}" for i in range(len(sizes)))
    return [{"name": n, "size": s, "parameterValues": {}} for n, s in zip(names, sizes, strict=True)]


# --- create ---------------------------------------------------------------------------------------

# Every field of the contract's Experiment resource, present in every response.
EXPERIMENT_FIELDS = {
    "id",
    "name",
    "description",
    "idType",
    "secondaryIDType",
    "identityResolutionSource",
    "lastModifierID",
    "lastModifierName",
    "lastModifierEmail",
    "lastModifiedTime",
    "createdTime",
    "creatorID",
    "creatorEmail",
    "creatorName",
    "tags",
    "targetApps",
    "holdoutIDs",
    "team",
    "teamID",
    "version",
    "permalink",
    "owner",
    "isStale",
    "links",
    "externalEvents",
    "hypothesis",
    "groups",
    "allocation",
    "userBuckets",
    "layerID",
    "targetingGateID",
    "launchedGroupID",
    "duration",
    "startTime",
    "endTime",
    "decisionTime",
    "decisionReason",
    "status",
    "experimentType",
    "isSidecar",
    "isAnalysisOnly",
    "enabledNonProdEnvironments",
    "inlineTargetingRulesJSON",
    "inlineTargetingRules",
    "primaryMetrics",
    "secondaryMetrics",
    "otherMetrics",
    "primaryMetricTags",
    "secondaryMetricTags",
    "sequentialTesting",
    "bonferroniCorrection",
    "bonferroniCorrectionPerMetric",
    "benjaminiHochbergPerVariant",
    "benjaminiHochbergPerMetric",
    "benjaminiPrimaryMetricsOnly",
    "defaultConfidenceInterval",
    "defaultRollupWindow",
    "bayesianPriors",
    "analyticsType",
    "sprtMDESettings",
    "cureCovariates",
    "preComputedUserDimensions",
    "assignmentSourceFilters",
    "allocationDuration",
    "cohortedMetricsMatureAfterEnd",
    "cohortWaitUntilEndToInclude",
    "scheduledReloadHour",
    "scheduledReloadDays",
    "turboMode",
    "manualQualityScores",
    "qualityScore",
    "summarySections",
    "reviewSettings",
    "healthCheckStatus",
    "healthChecks",
}


def create_assignment_source(console: Console, name: str) -> None:
    mapping = {"serviceUnitID": "userID", "column": "user_id"}
    resp = console.post(
        ASSIGNMENT_SOURCES,
        json={
            "name": name,
            "sql": "SELECT user_id, ts, experiment_id, group_id FROM assignments",
            "timestampColumn": "ts",
            "experimentIDColumn": "experiment_id",
            "groupIDColumn": "group_id",
            "idTypeMapping": [mapping],
        },
    )
    assert resp.status_code == 201, resp.text


def test_create_with_every_writable_field_keeps_each(console: Console) -> None:
    gate_id = console.create_gate()
    create_assignment_source(console, "assignments")
    suffix = uid()
    body: dict[str, Any] = {
        "name": f"Full {suffix}",
        "id": f"full-{suffix}",
        "description": "all the fields",
        "idType": "stableID",
        "secondaryIDType": "companyID",
        "identifierMappingMode": "firstTouchOneToMany",
        "identityResolutionSource": "people",
        "hypothesis": "A shorter checkout raises purchases.",
        "links": [{"url": "https://example.com/plan", "title": "plan"}],
        "externalEvents": [{"name": "launch party", "timestamp": 1_700_000_000_000}],
        "externalExperimentName": "legacy-checkout",
        "groups": [
            {"name": "Control", "id": "ctl", "size": 33.34, "parameterValues": {"steps": 3}},
            {
                "name": "Short",
                "id": "short",
                "size": 33.33,
                "parameterValues": {"steps": 2},
                "description": "d",
            },
            {"name": "Shortest", "size": 33.33, "parameterValues": {"steps": 1}, "highlighted": True},
        ],
        "controlGroupID": "ctl",
        "allocation": 12.5,
        "userBuckets": [0, 1, 999],
        "primaryMetricTags": ["core"],
        "secondaryMetricTags": ["guardrails"],
        "primaryMetrics": [metric("purchase", "event_count", direction="increase", hypothesizedValue=0.02)],
        "secondaryMetrics": [metric("purchase", "event_dau", direction="decrease")],
        "otherMetrics": [metric("page_view", "event_count")],
        "targetApps": ["web", "ios"],
        "tags": ["checkout", suffix],
        "duration": 21,
        "targetExposures": 50_000,
        "targetingGateID": gate_id,
        "sequentialTesting": True,
        "bonferroniCorrection": True,
        "bonferroniCorrectionPerMetric": True,
        "benjaminiHochbergPerVariant": True,
        "benjaminiHochbergPerMetric": True,
        "benjaminiPrimaryMetricsOnly": True,
        "defaultConfidenceInterval": "90",
        "defaultRollupWindow": 7,
        "defaultChanceToBeatThreshold": 95,
        "bayesianPriors": [{"metric": metric(), "priorMean": 0.1, "priorStdDev": 0.5}],
        "manualQualityScores": [
            {
                "criteriaName": "DESIGN_REVIEW",
                "status": "PASSED",
                "criteriaDescription": "Reviewed",
                "score": 100,
                "weight": 10,
            }
        ],
        "status": "setup",
        "launchedGroupID": None,
        "decisionReason": "not yet",
        "assignmentSourceName": "assignments",
        "assignmentSourceExperimentName": "checkout_v2",
        "assignmentSourceFilters": [{"condition": "in", "column": "country", "values": ["CA", "US"]}],
        "creatorID": "user-42",
        "creatorEmail": "ada@example.com",
        "isAnalysisOnly": False,
        "team": "Growth",
        "teamID": "team-1",
        "allocationDuration": 10,
        "cohortedAnalysisDuration": 7,
        "cohortedMetricsMatureAfterEnd": True,
        "cohortWaitUntilEndToInclude": True,
        "fixedAnalysisDuration": 14,
        "scheduledReloadHour": 5,
        "scheduledReloadType": "incremental",
        "scheduledReloadDays": [1, 3, 5],
        "turboMode": True,
        "analysisEndTime": "2030-01-31",
        "analyticsType": "sprt",
        "defaultSPRTPowerParam": 80,
        "defaultSPRTMDE": 0.01,
        "sprtBaselineMode": "in_experiment_control",
        "sprtMDESettings": [
            {"metricKey": "purchase::event_count", "groupSettings": [{"groupKey": "short", "mde": 0.02}]}
        ],
        "isSidecar": True,
        "experimentType": "SIDECAR",
        "subtype": "conversion",
        "enabledNonProdEnvironments": ["staging"],
        "cureCovariates": [metric()],
        "preComputedUserDimensions": [{"name": "plan", "propertySource": "accounts"}],
        "stratifiedSampling": {
            "status": "pending",
            "metric": {"name": "purchase", "startDate": "2024-01-01", "endDate": "2024-01-31"},
            "useStratifiedSalt": True,
            "deltaReduction": 0.5,
        },
        "layerID": None,
        "inlineTargetingRules": [rule(50, country("CA"), name="canada")],
        "owner": {
            "ownerID": "user-42",
            "ownerType": "USER",
            "ownerName": "Ada",
            "ownerEmail": "ada@example.com",
        },
        "reviewSettings": {
            "requiredReview": True,
            "allowedReviewers": [{"id": "u1", "name": "Bo", "email": "b@x"}],
        },
        "summarySections": [{"name": "Summary", "content": "nothing yet"}],
        "holdoutIDs": [],
    }
    resp = console.post(EXPERIMENTS, json=body)
    assert resp.status_code == 201, resp.text
    exp = resp.json()["data"]
    derived = {"groups", "inlineTargetingRules"}
    for key, value in body.items():
        if key not in derived:
            assert exp[key] == value, key
    assert [(g["name"], g["size"], g["parameterValues"]) for g in exp["groups"]] == [
        (g["name"], g["size"], g["parameterValues"]) for g in body["groups"]
    ]
    assert [g["id"] for g in exp["groups"][:2]] == ["ctl", "short"]
    assert exp["groups"][2]["id"] and exp["groups"][2]["highlighted"] is True
    assert exp["groups"][1]["description"] == "d"
    [stored] = exp["inlineTargetingRules"]
    assert (stored["name"], stored["passPercentage"], stored["conditions"]) == ("canada", 50, [country("CA")])
    assert stored["id"] and stored["baseID"]
    assert json.loads(exp["inlineTargetingRulesJSON"]) == exp["inlineTargetingRules"]
    assert console.experiment(exp["id"]) == exp


def test_create_with_explicit_id_keeps_it(console: Console) -> None:
    exp_id = f"Explicit-ID_{uid()}"
    exp = console.create(id=exp_id, name="A name unlike the id")
    assert exp["id"] == exp_id
    assert console.experiment(exp_id)["name"] == "A name unlike the id"


@pytest.mark.parametrize("name", ["qualifying_events", "Assignment Sources", "entity_property"])
def test_ids_of_other_routes_under_experiments_are_reserved(console: Console, name: str) -> None:
    assert_error(console.post(EXPERIMENTS, json={"name": name}), 400, "id")


def test_create_duplicate_id_is_409_and_keeps_the_first(console: Console) -> None:
    first = console.create(description="first")
    assert_error(console.post(EXPERIMENTS, json={"name": "other name", "id": first["id"]}), 409)
    assert console.experiment(first["id"]) == first


def test_create_duplicate_derived_id_is_409(console: Console) -> None:
    name = f"Same Name {uid()}"
    assert console.post(EXPERIMENTS, json={"name": name}).status_code == 201
    assert_error(console.post(EXPERIMENTS, json={"name": name}), 409)


def test_integers_stay_integers_in_the_json_text(console: Console) -> None:
    exp = console.create(groups=groups(50, 50), allocation=25, duration=7)
    text = console.get(f"{EXPERIMENTS}/{exp['id']}").text
    for field in ("size", "allocation", "duration", "version"):
        assert re.search(rf'"{field}":\s*\d+[,}}\s]', text), field
        assert not re.search(rf'"{field}":\s*\d+\.0[,}}\s]', text), field
    assert re.search(r'"createdTime":\s*\d+[,}\s]', text)


# --- limits: just inside passes, just outside is a 400 naming the field ---------------------------

THREE = "abc"
MANUAL = {"criteriaName": "C0", "status": "PASSED", "criteriaDescription": "", "score": 100, "weight": 1}

INSIDE = [
    pytest.param({"name": THREE}, id="name-3"),
    pytest.param({"name": "n" * 100}, id="name-100"),
    pytest.param({"name": "a-b_c D9"}, id="name-all-allowed-characters"),
    pytest.param({"description": "d" * 1000}, id="description-1000"),
    pytest.param({"allocation": 0}, id="allocation-0"),
    pytest.param({"allocation": 100}, id="allocation-100"),
    pytest.param({"userBuckets": [0, 999, 999.5]}, id="buckets-0-and-below-1000"),
    pytest.param({"duration": 2}, id="duration-2"),
    pytest.param({"targetExposures": 2}, id="target-exposures-2"),
    pytest.param({"allocationDuration": 2}, id="allocation-duration-2"),
    pytest.param({"cohortedAnalysisDuration": 2}, id="cohorted-2"),
    pytest.param({"fixedAnalysisDuration": 2}, id="fixed-2"),
    pytest.param({"scheduledReloadHour": 0}, id="reload-hour-0"),
    pytest.param({"scheduledReloadHour": 23}, id="reload-hour-23"),
    pytest.param({"scheduledReloadDays": [0, 1, 2, 3, 4, 5, 6]}, id="reload-days-0-6"),
    pytest.param({"defaultRollupWindow": -1}, id="rollup-minus-1"),
    pytest.param({"defaultRollupWindow": 1}, id="rollup-1"),
    pytest.param({"defaultRollupWindow": 7}, id="rollup-7"),
    *[pytest.param({"defaultConfidenceInterval": c}, id=f"ci-{c}") for c in ("80", "90", "95", "98", "99")],
    *[
        pytest.param({"identifierMappingMode": m}, id=f"mapping-{m}")
        for m in ("strictOneToOne", "firstTouchOneToMany", "lastTouchOneToMany")
    ],
    *[
        pytest.param({"experimentType": t}, id=f"type-{t}")
        for t in ("BASE", "GEO", "SWITCHBACK", "PROMPT", "SIDECAR", "GRID_SEARCH")
    ],
    *[pytest.param({"analyticsType": t}, id=f"analytics-{t}") for t in ("frequentist", "bayesian")],
    *[
        pytest.param({"sprtBaselineMode": m}, id=f"sprt-mode-{m}")
        for m in ("manual", "in_experiment_control")
    ],
    *[pytest.param({"scheduledReloadType": t}, id=f"reload-{t}") for t in ("full", "incremental")],
    pytest.param({"status": "setup"}, id="status-setup"),
    pytest.param(
        {"manualQualityScores": [{**MANUAL, "criteriaName": f"C{i}"} for i in range(10)]},
        id="manual-scores-10",
    ),
    pytest.param({"groups": groups(0, 100)}, id="group-sizes-0-and-100"),
    pytest.param({"groups": groups(33.33, 33.33, 33.34)}, id="group-sizes-sum-100"),
    pytest.param({"targetingGateID": ""}, id="targeting-gate-empty"),
    pytest.param({"targetingGateID": None}, id="targeting-gate-null"),
    pytest.param({"targetApps": "web"}, id="target-apps-one-string"),
]


@pytest.mark.parametrize("fields", INSIDE)
def test_values_just_inside_the_limits_are_accepted(console: Console, fields: dict[str, Any]) -> None:
    exp = console.create(**fields)
    for key, value in fields.items():
        if key == "groups":
            assert [g["size"] for g in exp["groups"]] == [g["size"] for g in value]
        elif key == "targetApps":
            assert exp[key] == [value]
        else:
            assert exp[key] == value, key


def test_id_at_3_and_100_characters_is_accepted(console: Console) -> None:
    for exp_id in (f"a{uid()}"[:3], f"i-{uid()}".ljust(100, "x")):
        resp = console.post(EXPERIMENTS, json={"name": "valid name", "id": exp_id})
        if len(exp_id) == 3 and resp.status_code == 409:
            continue  # a 3-character id can be taken by another run; the 409 proves it validated
        assert resp.status_code == 201, resp.text
        assert resp.json()["data"]["id"] == exp_id


OUTSIDE = [
    pytest.param({"name": "ab"}, "name", id="name-2"),
    pytest.param({"name": "n" * 101}, "name", id="name-101"),
    pytest.param({"name": "dotted.name"}, "name", id="name-period"),
    pytest.param({"name": "   "}, "name", id="name-blank"),
    pytest.param({"id": "ab"}, "id", id="id-2"),
    pytest.param({"id": "i" * 101}, "id", id="id-101"),
    pytest.param({"id": "has space"}, "id", id="id-space"),
    pytest.param({"id": "has.period"}, "id", id="id-period"),
    pytest.param({"description": "d" * 1001}, "description", id="description-1001"),
    pytest.param({"allocation": -0.01}, "allocation", id="allocation-below-0"),
    pytest.param({"allocation": 100.01}, "allocation", id="allocation-above-100"),
    pytest.param({"allocation": "50"}, "allocation", id="allocation-string"),
    pytest.param({"userBuckets": [-1]}, "userBuckets[0]", id="bucket-negative"),
    pytest.param({"userBuckets": [0, 1000]}, "userBuckets[1]", id="bucket-1000"),
    pytest.param({"duration": 1}, "duration", id="duration-1"),
    pytest.param({"duration": 2.5}, "duration", id="duration-fraction"),
    pytest.param({"targetExposures": 1}, "targetExposures", id="target-exposures-1"),
    pytest.param({"allocationDuration": 1}, "allocationDuration", id="allocation-duration-1"),
    pytest.param({"cohortedAnalysisDuration": 1}, "cohortedAnalysisDuration", id="cohorted-1"),
    pytest.param({"fixedAnalysisDuration": 1}, "fixedAnalysisDuration", id="fixed-1"),
    pytest.param({"scheduledReloadHour": -1}, "scheduledReloadHour", id="reload-hour-minus-1"),
    pytest.param({"scheduledReloadHour": 24}, "scheduledReloadHour", id="reload-hour-24"),
    pytest.param({"scheduledReloadDays": [7]}, "scheduledReloadDays[0]", id="reload-day-7"),
    pytest.param({"scheduledReloadDays": [0, -1]}, "scheduledReloadDays[1]", id="reload-day-minus-1"),
    pytest.param({"defaultRollupWindow": 0}, "defaultRollupWindow", id="rollup-0"),
    pytest.param({"defaultRollupWindow": 2}, "defaultRollupWindow", id="rollup-2"),
    pytest.param({"defaultRollupWindow": 14}, "defaultRollupWindow", id="rollup-14"),
    pytest.param({"defaultRollupWindow": True}, "defaultRollupWindow", id="rollup-true"),
    pytest.param({"defaultConfidenceInterval": "85"}, "defaultConfidenceInterval", id="ci-85"),
    pytest.param({"defaultConfidenceInterval": 95}, "defaultConfidenceInterval", id="ci-number"),
    pytest.param({"identifierMappingMode": "oneToOne"}, "identifierMappingMode", id="mapping-unknown"),
    pytest.param({"experimentType": "base"}, "experimentType", id="type-lower-case"),
    pytest.param({"analyticsType": "bootstrap"}, "analyticsType", id="analytics-unknown"),
    pytest.param({"sprtBaselineMode": "auto"}, "sprtBaselineMode", id="sprt-mode-unknown"),
    pytest.param({"scheduledReloadType": "partial"}, "scheduledReloadType", id="reload-type-unknown"),
    pytest.param({"status": "paused"}, "status", id="status-unknown"),
    pytest.param({"status": "active"}, "status", id="status-not-setup-on-create"),
    pytest.param(
        {"manualQualityScores": [{**MANUAL, "criteriaName": f"C{i}"} for i in range(11)]},
        "manualQualityScores",
        id="manual-scores-11",
    ),
    pytest.param(
        {"manualQualityScores": [{**MANUAL, "status": "OK"}]}, "manualQualityScores[0].status", id="q-status"
    ),
    pytest.param(
        {"manualQualityScores": [{**MANUAL, "score": 101}]}, "manualQualityScores[0].score", id="q-score"
    ),
    pytest.param(
        {"manualQualityScores": [{**MANUAL, "weight": -1}]}, "manualQualityScores[0].weight", id="q-weight"
    ),
    pytest.param(
        {"manualQualityScores": [MANUAL, MANUAL]}, "manualQualityScores[1].criteriaName", id="q-duplicate"
    ),
    pytest.param({"groups": groups(-1, 101)}, "groups[0].size", id="group-size-negative"),
    pytest.param({"groups": groups(0, 100.01)}, "groups[1].size", id="group-size-above-100"),
    pytest.param({"groups": groups(50, 49.99)}, "groups", id="group-sizes-sum-99.99"),
    pytest.param({"groups": groups(50, 50.01)}, "groups", id="group-sizes-sum-100.01"),
    pytest.param({"groups": groups(100)}, "groups", id="one-group"),
    pytest.param({"groups": groups(50, 50, names=("A", "a"))}, "groups[1].name", id="group-names-repeat"),
    pytest.param(
        {"groups": [{"name": "A", "id": "g", "size": 50}, {"name": "B", "id": "g", "size": 50}]},
        "groups[1].id",
        id="group-ids-repeat",
    ),
    pytest.param({"groups": [{"name": "A", "size": 50}, {"size": 50}]}, "groups[1].name", id="group-no-name"),
    pytest.param({"controlGroupID": "nope"}, "controlGroupID", id="control-not-a-group"),
    pytest.param({"launchedGroupID": "x"}, "launchedGroupID", id="launched-on-create"),
    pytest.param({"links": [{"url": "not a url"}]}, "links[0].url", id="link-not-a-url"),
    pytest.param({"primaryMetrics": [{"name": "purchase"}]}, "primaryMetrics[0].type", id="metric-no-type"),
    pytest.param(
        {"primaryMetrics": [metric(direction="sideways")]},
        "primaryMetrics[0].direction",
        id="metric-direction",
    ),
    pytest.param(
        {"primaryMetrics": [metric()], "secondaryMetrics": [metric()]},
        "secondaryMetrics[0]",
        id="metric-listed-twice",
    ),
    pytest.param({"tags": None}, "tags", id="tags-null"),
    pytest.param({"sequentialTesting": "true"}, "sequentialTesting", id="boolean-string"),
    pytest.param({"colour": "blue"}, "colour", id="unknown-field"),
    pytest.param(
        {"groups": [{**groups(50)[0], "colour": 1}, groups(50)[0]]}, "groups[0].colour", id="group-extra"
    ),
    pytest.param({"defaultSPRTPowerParam": 100}, "defaultSPRTPowerParam", id="sprt-power-100"),
    pytest.param({"defaultSPRTMDE": 0}, "defaultSPRTMDE", id="sprt-mde-0"),
]


@pytest.mark.parametrize(("fields", "field"), OUTSIDE)
def test_values_just_outside_the_limits_are_400_naming_the_field(
    console: Console, fields: dict[str, Any], field: str
) -> None:
    exp_id = f"bad_{uid()}"
    body = {"name": "valid name", "id": exp_id, **fields}
    assert_error(console.post(EXPERIMENTS, json=body), 400, field)
    if "id" not in fields:
        assert_error(console.get(f"{EXPERIMENTS}/{exp_id}"), 404)


def test_body_that_is_not_an_object_is_400(console: Console) -> None:
    assert_error(console.post(EXPERIMENTS, json=["name"]), 400)
    assert_error(
        console.post(EXPERIMENTS, data="{not json", headers={"Content-Type": "application/json"}), 400
    )


# --- SPRT settings --------------------------------------------------------------------------------


def _sprt(mode: str, *settings: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "analyticsType": "sprt",
        "sprtBaselineMode": mode,
        "primaryMetrics": [metric("purchase", "event_count")],
        "secondaryMetrics": [metric("purchase", "event_dau")],
        "sprtMDESettings": list(settings),
        **extra,
    }


def _setting(key: str, **group: Any) -> dict[str, Any]:
    return {"metricKey": key, "groupSettings": [{"groupKey": "Test", **group}]}


COUNT, DAU = "purchase::event_count", "purchase::event_dau"

SPRT_OK = [
    pytest.param(
        _sprt(
            "manual", _setting(COUNT, mde=0.1, mean=1, stdDev=2), _setting(DAU, mde=0.1, mean=0.5, stdDev=0.5)
        ),
        id="manual-complete",
    ),
    pytest.param(
        _sprt(
            "manual",
            _setting(COUNT, mean=1, stdDev=2),
            _setting(DAU, mean=0.5, stdDev=0.5),
            defaultSPRTMDE=0.05,
        ),
        id="manual-mde-from-default",
    ),
    pytest.param(
        _sprt("in_experiment_control", _setting(COUNT, mde=0.1), _setting(DAU, mde=0.2)), id="iec-mde-each"
    ),
    pytest.param(_sprt("in_experiment_control", defaultSPRTMDE=0.05), id="iec-default-mde"),
]


@pytest.mark.parametrize("fields", SPRT_OK)
def test_complete_sprt_settings_are_accepted(console: Console, fields: dict[str, Any]) -> None:
    exp = console.create(**fields)
    assert exp["analyticsType"] == "sprt"
    assert exp["sprtMDESettings"] == fields["sprtMDESettings"]


SPRT_BAD = [
    pytest.param(
        _sprt("manual", _setting(COUNT, mde=0.1, stdDev=2), _setting(DAU, mde=0.1, mean=0.5, stdDev=0.5)),
        "sprtMDESettings[0].groupSettings[0].mean",
        id="manual-no-mean",
    ),
    pytest.param(
        _sprt("manual", _setting(COUNT, mde=0.1, mean=1), _setting(DAU, mde=0.1, mean=0.5, stdDev=0.5)),
        "sprtMDESettings[0].groupSettings[0].stdDev",
        id="manual-no-std-dev",
    ),
    pytest.param(
        _sprt("manual", _setting(COUNT, mean=1, stdDev=2), _setting(DAU, mde=0.1, mean=0.5, stdDev=0.5)),
        "sprtMDESettings[0].groupSettings[0].mde",
        id="manual-no-mde-no-default",
    ),
    pytest.param(
        _sprt("manual", _setting(COUNT, mde=0.1, mean=1, stdDev=2), defaultSPRTMDE=0.1),
        "sprtMDESettings",
        id="manual-metric-without-settings",
    ),
    pytest.param(
        _sprt("in_experiment_control", _setting(COUNT, mde=0.1)), "sprtMDESettings", id="iec-missing-metric"
    ),
    pytest.param(
        _sprt("in_experiment_control", _setting(COUNT), _setting(DAU, mde=0.1)),
        "sprtMDESettings[0].groupSettings[0].mde",
        id="iec-no-mde",
    ),
    pytest.param({**_sprt("manual"), "sprtBaselineMode": None}, "sprtBaselineMode", id="sprt-without-mode"),
    pytest.param(
        _sprt("in_experiment_control", _setting("other::sum", mde=1), defaultSPRTMDE=0.1),
        "sprtMDESettings[0].metricKey",
        id="settings-for-a-metric-not-on-the-experiment",
    ),
    pytest.param(
        _sprt(
            "in_experiment_control",
            {"metricKey": COUNT, "groupSettings": [{"groupKey": "zzz", "mde": 1}]},
            defaultSPRTMDE=0.1,
        ),
        "sprtMDESettings[0].groupSettings[0].groupKey",
        id="settings-for-an-unknown-group",
    ),
]


@pytest.mark.parametrize(("fields", "field"), SPRT_BAD)
def test_incomplete_sprt_settings_are_400_naming_the_field(
    console: Console, fields: dict[str, Any], field: str
) -> None:
    body = {k: v for k, v in fields.items() if v is not None}
    assert_error(
        console.post(EXPERIMENTS, json={"name": "valid name", "id": f"sprt_{uid()}", **body}), 400, field
    )


def test_switching_to_sprt_by_patch_checks_completeness(console: Console) -> None:
    exp = console.create(primaryMetrics=[metric()])
    path = f"{EXPERIMENTS}/{exp['id']}"
    assert_error(
        console.patch(path, json={"analyticsType": "sprt", "sprtBaselineMode": "manual"}),
        400,
        "sprtMDESettings",
    )
    resp = console.patch(
        path,
        json={"analyticsType": "sprt", "sprtBaselineMode": "in_experiment_control", "defaultSPRTMDE": 0.02},
    )
    assert resp.status_code == 200, resp.text
    assert console.experiment(exp["id"])["analyticsType"] == "sprt"


# --- references -----------------------------------------------------------------------------------


def test_targeting_gate_must_exist(console: Console) -> None:
    missing = f"no_gate_{uid()}"
    assert_error(
        console.post(EXPERIMENTS, json={"name": "valid name", "targetingGateID": missing}),
        400,
        "targetingGateID",
    )
    gate_id = console.create_gate()
    exp = console.create(targetingGateID=gate_id)
    assert exp["targetingGateID"] == gate_id
    # The gate's experiment_references lists the experiment (top-level targetingGateID).
    refs = console.get(f"{GATES}/{gate_id}/experiment_references").json()["data"]
    assert exp["id"] in [r["id"] for r in refs]


def test_assignment_source_must_exist(console: Console) -> None:
    """An experiment analysed from a warehouse names its assignment source, which must exist (as
    a gate, layer, holdout or metric it names must): a typo would leave it with no data."""
    missing = f"no source {uid()}"
    body = assert_error(
        console.post(EXPERIMENTS, json={"name": f"exp {uid()}", "assignmentSourceName": missing}),
        400,
        "assignmentSourceName",
    )
    assert missing in body["message"]
    name = f"assignments {uid()}"
    create_assignment_source(console, name)
    exp = console.create(assignmentSourceName=name)
    assert exp["assignmentSourceName"] == name
    patched = console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"assignmentSourceName": missing})
    assert_error(patched, 400, "assignmentSourceName")
    assert console.experiment(exp["id"])["assignmentSourceName"] == name


def test_layer_must_exist_and_none_do_yet(console: Console) -> None:
    assert_error(
        console.post(EXPERIMENTS, json={"name": "valid name", "layerID": f"layer_{uid()}"}), 400, "layerID"
    )


def test_holdouts_must_exist(console: Console) -> None:
    body = {"name": "valid name", "holdoutIDs": [f"holdout_{uid()}"]}
    assert_error(console.post(EXPERIMENTS, json=body), 400, "holdoutIDs[0]")


def test_holdout_that_exists_is_accepted(console: Console) -> None:
    suffix = uid()
    resp = console.post("/console/v1/holdouts", json={"name": f"holdout {suffix}", "id": f"holdout_{suffix}"})
    assert resp.status_code == 201, resp.text
    holdout_id = resp.json()["data"]["id"]
    assert console.create(holdoutIDs=[holdout_id])["holdoutIDs"] == [holdout_id]


@pytest.mark.parametrize("field", ["primaryMetrics", "secondaryMetrics", "otherMetrics"])
def test_built_in_event_metrics_exist_for_any_event(console: Console, field: str) -> None:
    event = f"event_{uid()}"
    chosen = [metric(event, "event_count"), metric(event, "event_dau")]
    assert console.create(**{field: chosen})[field] == chosen


def test_stored_metric_is_accepted(console: Console) -> None:
    name = f"revenue_{uid()}"
    body = {"name": name, "type": "sum", "metricEvents": [{"name": f"purchase_{uid()}"}]}
    resp = console.post("/console/v1/metrics", json=body)
    assert resp.status_code == 201, resp.text
    assert console.create(primaryMetrics=[metric(name, "sum")])["primaryMetrics"] == [metric(name, "sum")]
    body = {"name": "valid name", "primaryMetrics": [metric(f"{name}_other", "sum")]}
    assert_error(console.post(EXPERIMENTS, json=body), 400, "primaryMetrics[0]")


@pytest.mark.parametrize("field", ["primaryMetrics", "secondaryMetrics", "otherMetrics"])
def test_unknown_metric_is_400_naming_it(console: Console, field: str) -> None:
    body = {"name": "valid name", field: [metric("purchase", "event_count"), metric(f"m_{uid()}", "ratio")]}
    assert_error(console.post(EXPERIMENTS, json=body), 400, f"{field}[1]")


def test_inline_rule_gate_condition_must_name_a_gate(console: Console) -> None:
    cond = {"type": "passes_gate", "targetValue": f"no_gate_{uid()}"}
    body = {"name": "valid name", "inlineTargetingRules": [rule(100, cond)]}
    assert_error(
        console.post(EXPERIMENTS, json=body), 400, "inlineTargetingRules[0].conditions[0].targetValue"
    )
    gate_id = console.create_gate()
    exp = console.create(inlineTargetingRules=[rule(100, {"type": "passes_gate", "targetValue": gate_id})])
    refs = console.get(f"{GATES}/{gate_id}/experiment_references").json()["data"]
    assert exp["id"] in [r["id"] for r in refs]


# --- inline targeting rules: the array and its JSON text ------------------------------------------


def test_inline_rules_given_as_json_text_fill_both_fields(console: Console) -> None:
    rules = [rule(25, country("FR"), name="france"), rule(100, name="everyone")]
    exp = console.create(inlineTargetingRulesJSON=json.dumps(rules))
    assert [(r["name"], r["passPercentage"]) for r in exp["inlineTargetingRules"]] == [
        ("france", 25),
        ("everyone", 100),
    ]
    assert exp["inlineTargetingRules"][0]["conditions"] == [country("FR")]
    assert json.loads(exp["inlineTargetingRulesJSON"]) == exp["inlineTargetingRules"]


def test_inline_rules_patched_as_array_update_the_json_text(console: Console) -> None:
    exp = console.create(inlineTargetingRulesJSON=json.dumps([rule(25, country("FR"))]))
    first = exp["inlineTargetingRules"][0]
    kept = {**rule(75, country("FR")), "id": first["id"]}
    resp = console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"inlineTargetingRules": [kept, rule(10)]})
    assert resp.status_code == 200, resp.text
    patched = resp.json()["data"]
    assert patched["inlineTargetingRules"][0]["id"] == first["id"]
    assert [r["passPercentage"] for r in patched["inlineTargetingRules"]] == [75, 10]
    assert json.loads(patched["inlineTargetingRulesJSON"]) == patched["inlineTargetingRules"]


@pytest.mark.parametrize("text", ["", "{}", "[]"])
def test_empty_inline_rules_json_means_no_rules(console: Console, text: str) -> None:
    exp = console.create(inlineTargetingRulesJSON=text)
    assert exp["inlineTargetingRules"] == [] and exp["inlineTargetingRulesJSON"] == "[]"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        pytest.param("[{", "inlineTargetingRulesJSON", id="not-json"),
        pytest.param('{"a": 1}', "inlineTargetingRulesJSON", id="not-an-array"),
        pytest.param(json.dumps([rule(101)]), "inlineTargetingRulesJSON[0].passPercentage", id="bad-rule"),
    ],
)
def test_bad_inline_rules_json_is_400(console: Console, text: str, field: str) -> None:
    body = {"name": "valid name", "inlineTargetingRulesJSON": text}
    assert_error(console.post(EXPERIMENTS, json=body), 400, field)


def test_an_unknown_field_in_inline_rules_json_names_the_field_meant(console: Console) -> None:
    text = json.dumps([{**rule(10), "condition": []}])
    body = assert_error(
        console.post(EXPERIMENTS, json={"name": "valid name", "inlineTargetingRulesJSON": text}),
        400,
        "inlineTargetingRulesJSON[0].condition",
    )
    assert error_for(body, "inlineTargetingRulesJSON[0].condition") == (
        "is not a field of this request; did you mean conditions?"
    )


def test_inline_rules_json_and_array_must_agree(console: Console) -> None:
    rules = [rule(50, country("CA"))]
    exp = console.create(inlineTargetingRules=rules, inlineTargetingRulesJSON=json.dumps(rules))
    assert len(exp["inlineTargetingRules"]) == 1
    body = {
        "name": "valid name",
        "inlineTargetingRules": rules,
        "inlineTargetingRulesJSON": json.dumps([rule(10)]),
    }
    assert_error(console.post(EXPERIMENTS, json=body), 400, "inlineTargetingRulesJSON")


# --- full update (POST /experiments/{id}) ---------------------------------------------------------

FULL_REQUIRED = (
    "description",
    "idType",
    "hypothesis",
    "groups",
    "allocation",
    "targetingGateID",
    "bonferroniCorrection",
    "defaultConfidenceInterval",
    "status",
)


def full_body(exp: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {**{k: exp[k] for k in FULL_REQUIRED}, **changes}


def test_full_update_requires_the_peers_fields(console: Console) -> None:
    exp = console.create()
    resp = console.post(f"{EXPERIMENTS}/{exp['id']}", json={"name": "renamed"})
    body = assert_error(resp, 400)
    assert {e["field"] for e in body["errors"]} == set(FULL_REQUIRED)
    assert console.experiment(exp["id"]) == exp


def test_full_update_changes_the_fields_sent_and_keeps_the_rest(console: Console) -> None:
    exp = console.create(tags=["keep"], duration=10)
    body = full_body(
        exp,
        description="after",
        hypothesis="A new hypothesis",
        allocation=40,
        groups=[{**g, "size": s} for g, s in zip(exp["groups"], (30, 70), strict=True)],
        bonferroniCorrection=True,
        defaultConfidenceInterval="99",
    )
    resp = console.post(f"{EXPERIMENTS}/{exp['id']}", json=body)
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["description"] == "after" and updated["hypothesis"] == "A new hypothesis"
    assert updated["allocation"] == 40 and updated["bonferroniCorrection"] is True
    assert updated["defaultConfidenceInterval"] == "99"
    assert [(g["id"], g["size"]) for g in updated["groups"]] == [
        (exp["groups"][0]["id"], 30),
        (exp["groups"][1]["id"], 70),
    ]
    assert updated["tags"] == ["keep"] and updated["duration"] == 10
    assert updated["version"] == exp["version"] + 1
    assert updated["createdTime"] == exp["createdTime"]
    assert updated["lastModifiedTime"] >= exp["lastModifiedTime"]
    assert console.experiment(exp["id"]) == updated


def test_full_update_cannot_change_status(console: Console) -> None:
    exp = console.create()
    body = assert_error(
        console.post(f"{EXPERIMENTS}/{exp['id']}", json=full_body(exp, status="active")), 400, "status"
    )
    assert "setup" in body["message"]
    assert console.experiment(exp["id"])["status"] == "setup"


def test_full_update_of_unknown_experiment_is_404(console: Console) -> None:
    exp = console.create()
    assert_error(console.post(f"{EXPERIMENTS}/missing_{uid()}", json=full_body(exp)), 404)


# --- partial update (PATCH /experiments/{id}) -----------------------------------------------------


def test_patch_changes_only_the_fields_sent(console: Console) -> None:
    exp = console.create(description="original", tags=["a"], hypothesis="h")
    resp = console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"description": "patched"})
    assert resp.status_code == 200, resp.text
    patched = resp.json()["data"]
    assert patched["description"] == "patched"
    assert patched["version"] == exp["version"] + 1
    untouched = set(EXPERIMENT_FIELDS) - {"description", "version", "lastModifiedTime", "qualityScore"}
    assert {k: patched[k] for k in untouched} == {k: exp[k] for k in untouched}


def test_patch_groups_without_ids_keeps_the_ids_of_same_named_groups(console: Console) -> None:
    exp = console.create()
    ids = {g["name"]: g["id"] for g in exp["groups"]}
    new_groups = groups(40, 40, 20, names=("control", "Test", "Extra"))
    resp = console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"groups": new_groups})
    assert resp.status_code == 200, resp.text
    patched = resp.json()["data"]["groups"]
    assert [g["id"] for g in patched[:2]] == [ids["Control"], ids["Test"]]
    assert patched[2]["id"] not in ids.values()


def test_patch_nullable_fields_take_null_others_do_not(console: Console) -> None:
    exp = console.create(team="Growth", controlGroupID=None, scheduledReloadHour=3)
    path = f"{EXPERIMENTS}/{exp['id']}"
    resp = console.patch(path, json={"team": None, "scheduledReloadHour": None})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["team"] is None and resp.json()["data"]["scheduledReloadHour"] is None
    for field in ("description", "groups", "allocation", "duration", "tags"):
        assert_error(console.patch(path, json={field: None}), 400, field)


def test_patch_control_group_then_clear_it(console: Console) -> None:
    exp = console.create()
    path = f"{EXPERIMENTS}/{exp['id']}"
    test_id = exp["groups"][1]["id"]
    assert console.patch(path, json={"controlGroupID": test_id}).json()["data"]["controlGroupID"] == test_id
    cleared = console.patch(path, json={"controlGroupID": None}).json()["data"]
    assert "controlGroupID" not in cleared


def test_patch_removing_the_control_group_is_400(console: Console) -> None:
    exp = console.create(
        groups=[{"name": "A", "id": "a", "size": 50}, {"name": "B", "id": "b", "size": 50}],
        controlGroupID="a",
    )
    resp = console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"groups": groups(50, 50, names=("C", "D"))})
    assert_error(resp, 400, "controlGroupID")
    assert console.experiment(exp["id"]) == exp


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"allocation": 101}, "allocation", id="allocation"),
        pytest.param({"groups": groups(60, 60)}, "groups", id="sizes"),
        pytest.param({"targetingGateID": "no_such_gate_x"}, "targetingGateID", id="gate"),
        pytest.param({"primaryMetrics": [metric("x", "funnel")]}, "primaryMetrics[0]", id="metric"),
        pytest.param({"version": "1"}, "version", id="version-string"),
        pytest.param({"id": "new_id"}, "id", id="id-not-patchable"),
    ],
)
def test_failed_patch_is_400_and_changes_nothing(
    console: Console, fields: dict[str, Any], field: str
) -> None:
    exp = console.create()
    assert_error(console.patch(f"{EXPERIMENTS}/{exp['id']}", json=fields), 400, field)
    assert console.experiment(exp["id"]) == exp


def test_patch_with_current_version_succeeds_and_stale_is_409(console: Console) -> None:
    exp = console.create()
    path = f"{EXPERIMENTS}/{exp['id']}"
    resp = console.patch(path, json={"description": "v2", "version": exp["version"]})
    assert resp.status_code == 200, resp.text
    current = resp.json()["data"]
    assert_error(console.patch(path, json={"description": "stale", "version": exp["version"]}), 409)
    assert console.experiment(exp["id"]) == current


def test_patch_unknown_experiment_is_404(console: Console) -> None:
    assert_error(console.patch(f"{EXPERIMENTS}/missing_{uid()}", json={"description": "x"}), 404)


# --- delete ---------------------------------------------------------------------------------------


def test_delete_removes_the_experiment_and_its_history(console: Console) -> None:
    tag = f"t-{uid()}"
    exp = console.create(tags=[tag])
    path = f"{EXPERIMENTS}/{exp['id']}"
    assert console.patch(path, json={"description": "changed"}).status_code == 200
    resp = console.delete(path)
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str)
    assert_error(console.get(path), 404)
    assert_error(console.get(f"{path}/versions"), 404)
    assert console.listing(tags=tag)["data"] == []
    assert_error(console.delete(path), 404)
    reborn = console.post(EXPERIMENTS, json={"name": "second life", "id": exp["id"]}).json()["data"]
    assert reborn["version"] == 1
    assert [v["version"] for v in console.get(f"{path}/versions").json()["data"]] == [1]


def test_delete_of_an_active_experiment_is_400(console: Console) -> None:
    exp = console.create()
    console.act(exp["id"], "start")
    body = assert_error(console.delete(f"{EXPERIMENTS}/{exp['id']}"), 400, "status")
    assert "active" in body["message"]
    assert console.experiment(exp["id"])["status"] == "active"


# --- list filters and pagination ------------------------------------------------------------------


def test_list_returns_created_experiments_with_every_field(console: Console) -> None:
    tag = f"t-{uid()}"
    first = console.create(tags=[tag])
    second = console.create(tags=[tag])
    listing = console.listing(tags=tag)
    assert sorted(listing["data"], key=lambda e: e["id"]) == sorted([first, second], key=lambda e: e["id"])
    assert isinstance(listing["message"], str)
    assert listing["pagination"]["totalItems"] == 2


def test_filter_status_and_archived_only_when_asked(console: Console) -> None:
    tag = f"t-{uid()}"
    setup = console.create(tags=[tag])
    active = console.create(tags=[tag])
    console.act(active["id"], "start")
    archived = console.create(tags=[tag])
    console.act(archived["id"], "archive")
    assert ids_of(console.listing(tags=tag)) == {setup["id"], active["id"]}
    assert ids_of(console.listing(tags=tag, status="active")) == {active["id"]}
    assert ids_of(console.listing(tags=tag, status="archived")) == {archived["id"]}
    assert ids_of(console.listing(tags=tag, status="setup,archived")) == {setup["id"], archived["id"]}
    assert ids_of(console.listing(tags=tag, status=["setup", "active"])) == {setup["id"], active["id"]}


@pytest.mark.parametrize(
    ("field", "value", "other", "param"),
    [
        pytest.param("idType", "stableID", "userID", "idType", id="idType"),
        pytest.param("teamID", "team-a", "team-b", "teamID", id="teamID"),
        pytest.param("targetApps", ["web"], ["ios"], "targetAppID", id="targetAppID"),
        pytest.param("creatorID", "creator-a", "creator-b", "creatorID", id="creatorID"),
        pytest.param("experimentType", "GEO", "BASE", "experimentType", id="experimentType"),
    ],
)
def test_simple_filters(console: Console, field: str, value: Any, other: Any, param: str) -> None:
    tag = f"t-{uid()}"
    match = console.create(tags=[tag], **{field: value})
    console.create(tags=[tag], **{field: other})
    wanted = value[0] if isinstance(value, list) else value
    assert ids_of(console.listing(tags=tag, **{param: wanted})) == {match["id"]}


def test_filter_creator_name_and_tags_match_any(console: Console) -> None:
    tag_a, tag_b = f"a-{uid()}", f"b-{uid()}"
    first = console.create(tags=[tag_a])
    second = console.create(tags=[tag_b])
    assert ids_of(console.listing(tags=f"{tag_a},{tag_b}")) == {first["id"], second["id"]}
    assert ids_of(console.listing(tags=[tag_a, tag_b], creatorName="CONSOLE API")) == {
        first["id"],
        second["id"],
    }
    assert ids_of(console.listing(tags=tag_a, creatorName="Somebody Else")) == set()


def test_search_string_finds_text_in_id_name_description_or_hypothesis_ignoring_case(
    console: Console,
) -> None:
    tag, word = f"t-{uid()}", f"Zebra{uid()}"
    by_name = console.create(tags=[tag], name=f"checkout {word} test")
    by_description = console.create(tags=[tag], description=f"about {word.upper()}")
    by_hypothesis = console.create(tags=[tag], hypothesis=f"{word.lower()} converts better")
    console.create(tags=[tag], name=f"unrelated {uid()}")
    assert ids_of(console.listing(tags=tag, searchString=word)) == {
        by_name["id"],
        by_description["id"],
        by_hypothesis["id"],
    }
    assert ids_of(console.listing(tags=tag, searchString=by_name["id"])) == {by_name["id"]}
    resp = console.get(EXPERIMENTS, params={"searchString": ""})
    assert resp.status_code == 400 and resp.json()["errors"][0]["field"] == "searchString"


def test_filter_layer_matches_nothing_for_an_unknown_layer(console: Console) -> None:
    tag = f"t-{uid()}"
    console.create(tags=[tag])
    assert ids_of(console.listing(tags=tag, layerID=f"layer_{uid()}")) == set()


def test_filter_created_dates_are_utc_days_inclusive(console: Console) -> None:
    tag = f"t-{uid()}"
    exp = console.create(tags=[tag])
    day = dt.datetime.fromtimestamp(exp["createdTime"] / 1000, tz=dt.UTC).date()
    before, after = day - dt.timedelta(days=1), day + dt.timedelta(days=1)
    only = {exp["id"]}
    assert (
        ids_of(console.listing(tags=tag, createdStartDate=day.isoformat(), createdEndDate=day.isoformat()))
        == only
    )
    assert ids_of(console.listing(tags=tag, createdStartDate=before.isoformat())) == only
    assert ids_of(console.listing(tags=tag, createdEndDate=before.isoformat())) == set()
    assert ids_of(console.listing(tags=tag, createdStartDate=after.isoformat())) == set()
    assert ids_of(console.listing(tags=tag, createdEndDate=after.isoformat())) == only


def test_filter_is_stale(console: Console) -> None:
    tag = f"t-{uid()}"
    exp = console.create(tags=[tag])
    assert exp["isStale"] is False
    assert ids_of(console.listing(tags=tag, isStale="true")) == set()
    assert ids_of(console.listing(tags=tag, isStale="false")) == {exp["id"]}


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("status", "paused"),
        ("experimentType", "base"),
        ("createdStartDate", "2024-13-01"),
        ("createdEndDate", "01/02/2024"),
        ("isStale", "yes"),
        ("limit", "0"),
        ("limit", "1001"),
        ("page", "0"),
    ],
)
def test_invalid_list_parameter_is_400_naming_it(console: Console, param: str, value: str) -> None:
    body = assert_error(console.get(EXPERIMENTS, params={param: value}), 400)
    # A parameter that takes several values may be named with the index of the bad one.
    named = [e["field"] for e in body.get("errors") or [] if re.fullmatch(rf"{param}(\[\d+\])?", e["field"])]
    assert named, f"no error names {param!r}: {body}"
    assert param in body["message"], body


def test_end_date_before_start_date_is_400(console: Console) -> None:
    resp = console.get(EXPERIMENTS, params={"createdStartDate": "2024-02-02", "createdEndDate": "2024-02-01"})
    assert_error(resp, 400, "createdEndDate")


def test_pagination_walks_every_item_once_keeping_filters(console: Console) -> None:
    tag = f"t-{uid()}"
    made = [console.create(tags=[tag])["id"] for _ in range(5)]
    seen: list[str] = []
    page = console.listing(tags=tag, limit=2)
    assert page["pagination"]["previousPage"] is None
    while True:
        seen.extend(e["id"] for e in page["data"])
        assert page["pagination"]["totalItems"] == 5 and page["pagination"]["itemsPerPage"] == 2
        link = page["pagination"]["nextPage"]
        if link is None:
            break
        query = parse_qs(urlsplit(link).query)
        assert query["tags"] == [tag] and query["limit"] == ["2"]
        resp = console.get(link)
        assert resp.status_code == 200, resp.text
        page = resp.json()
    assert sorted(seen) == sorted(made) and len(seen) == len(set(seen))
    assert page["pagination"]["pageNumber"] == 3
    assert page["pagination"]["previousPage"] is not None


# --- versions -------------------------------------------------------------------------------------


def test_versions_keep_every_write_newest_first(console: Console) -> None:
    exp = console.create(description="v1")
    path = f"{EXPERIMENTS}/{exp['id']}"
    v2 = console.patch(path, json={"description": "v2"}).json()["data"]
    v3 = console.post(path, json=full_body(v2, description="v3")).json()["data"]
    v4 = console.act(exp["id"], "archive", {"archiveReason": "done"})
    listing = console.get(f"{path}/versions").json()
    assert [v["version"] for v in listing["data"]] == [4, 3, 2, 1]
    assert [v["description"] for v in listing["data"]] == ["v3", "v3", "v2", "v1"]
    assert [v["status"] for v in listing["data"]] == ["archived", "setup", "setup", "setup"]
    for shown, snapshot in zip(listing["data"], [v4, v3, v2, exp], strict=True):
        assert shown == snapshot
    assert listing["pagination"]["totalItems"] == 4
    page = console.get(f"{path}/versions", params={"limit": 1, "page": 2}).json()
    assert [v["version"] for v in page["data"]] == [3]
    assert page["pagination"]["nextPage"] is not None and page["pagination"]["previousPage"] is not None


def test_versions_of_unknown_experiment_is_404(console: Console) -> None:
    assert_error(console.get(f"{EXPERIMENTS}/missing_{uid()}/versions"), 404)


def test_failed_writes_add_no_version(console: Console) -> None:
    exp = console.create()
    path = f"{EXPERIMENTS}/{exp['id']}"
    assert_error(console.patch(path, json={"allocation": 200}), 400, "allocation")
    assert_error(console.put(f"{path}/make_decision", json={"id": "x", "decisionReason": "r"}), 400)
    assert [v["version"] for v in console.get(f"{path}/versions").json()["data"]] == [1]
