"""End-to-end tests of the experiment endpoints: create (every field, every limit at its edge),
read, full and partial update, delete, references, inline targeting, list filters, pagination
and versions, over HTTP against the local server.

The server is shared by the whole session, so every test makes its own experiments (unique
ids) and narrows list assertions with a tag of its own. Lifecycle actions, the editable-by-state
rules and the quality score are in `test_experiments_lifecycle.py`.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in `tests/functional/test_experiments_api.py`.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.client import assert_error, uid
from tests.functional.test_experiments_api import EXPERIMENT_FIELDS, EXPERIMENTS, Console


@pytest.fixture(scope="module")
def console(server: Any) -> Console:
    return Console(server.url, server.api_key)


# The contract types these "... or null": present, null when unset.
NULLABLE = {
    "secondaryIDType",
    "identityResolutionSource",
    "lastModifierEmail",
    "creatorEmail",
    "team",
    "teamID",
    "layerID",
    "targetingGateID",
    "launchedGroupID",
    "startTime",
    "endTime",
    "decisionTime",
    "decisionReason",
    "isAnalysisOnly",
    "allocationDuration",
    "scheduledReloadHour",
    "scheduledReloadDays",
}
# Optional fields with no default: left out when unset, never null.
LEFT_OUT_WHEN_UNSET = {
    "controlGroupID",
    "targetExposures",
    "defaultChanceToBeatThreshold",
    "defaultSPRTPowerParam",
    "defaultSPRTMDE",
    "sprtBaselineMode",
    "stratifiedSampling",
    "assignmentSourceName",
    "assignmentSourceExperimentName",
    "cohortedAnalysisDuration",
    "fixedAnalysisDuration",
    "scheduledReloadType",
    "analysisEndTime",
    "identifierMappingMode",
    "externalExperimentName",
    "subtype",
    "scheduledStartTime",
}


def test_create_with_only_a_name_fills_defaults_and_bookkeeping(console: Console) -> None:
    suffix = uid()
    resp = console.post(EXPERIMENTS, json={"name": f"New Checkout {suffix}"})
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert isinstance(body["message"], str) and body["message"]
    exp = body["data"]
    assert exp["id"] == f"new_checkout_{suffix}"
    assert exp["name"] == f"New Checkout {suffix}"
    assert exp.keys() >= EXPERIMENT_FIELDS, f"missing: {EXPERIMENT_FIELDS - exp.keys()}"
    for field in NULLABLE:
        assert exp[field] is None, field
    for field in LEFT_OUT_WHEN_UNSET:
        assert field not in exp, field
    assert exp["status"] == "setup"
    assert exp["version"] == 1
    assert exp["creatorName"] == "CONSOLE API" and exp["lastModifierName"] == "CONSOLE API"
    assert isinstance(exp["creatorID"], str) and exp["creatorID"]
    assert exp["owner"]["ownerType"] == "SDK_KEY"
    assert exp["owner"]["ownerName"] == "CONSOLE API"
    assert exp["owner"]["ownerEmail"] == ""
    assert exp["owner"]["ownerID"] == exp["creatorID"]
    assert exp["createdTime"] == exp["lastModifiedTime"] > 1_600_000_000_000
    # The peer's defaults: Control and Test, 50/50, with generated ids.
    assert [(g["name"], g["size"]) for g in exp["groups"]] == [("Control", 50), ("Test", 50)]
    ids = [g["id"] for g in exp["groups"]]
    assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == 2
    assert all(g["disabled"] is False and g["parameterValues"] == {} for g in exp["groups"])
    assert exp["allocation"] == 100 and exp["duration"] == 14 and exp["idType"] == "userID"
    assert exp["defaultConfidenceInterval"] == "95"
    assert exp["analyticsType"] == "frequentist" and exp["experimentType"] == "BASE"
    assert exp["inlineTargetingRules"] == [] and exp["inlineTargetingRulesJSON"] == "[]"
    assert exp["isStale"] is False
    assert exp["permalink"].endswith(f"/experiments/{exp['id']}")
    assert exp["healthCheckStatus"] == "PASSED"
    [check] = exp["healthChecks"]
    assert check["type"] == "has_checks" and check["status"] == "WAITING"
    assert set(exp["qualityScore"]) == {"score", "breakdown"}
    assert [c["criterion"] for c in exp["qualityScore"]["breakdown"]] == [
        "HYPOTHESIS_LENGTH",
        "BALANCED_EXPOSURE",
        "PRIMARY_METRICS_LENGTH",
        "COMPARISON_CORRECTION",
        "GUARDRAIL_METRIC_TAGS",
        "SUFFICIENT_SAMPLE",
        "POWER_ANALYSIS",
        "SEQUENTIAL_TESTING",
    ]
    assert console.experiment(exp["id"]) == exp


def test_get_unknown_experiment_is_404(console: Console) -> None:
    assert_error(console.get(f"{EXPERIMENTS}/no_such_experiment_{uid()}"), 404)


COUNT, DAU = "purchase::event_count", "purchase::event_dau"


# --- authentication -------------------------------------------------------------------------------


def test_missing_or_unknown_key_is_401_and_server_secret_403(console: Console, server: Any) -> None:
    exp_id = f"nokey_{uid()}"
    resp = console.post(EXPERIMENTS, key=None, json={"name": "no key", "id": exp_id})
    assert resp.status_code == 401, resp.text
    assert isinstance(resp.json()["message"], str)
    assert_error(console.get(EXPERIMENTS, key="console-not-a-real-key"), 401)
    assert_error(
        console.post(EXPERIMENTS, key=server.server_secret, json={"name": "secret", "id": exp_id}), 403
    )
    assert_error(console.get(f"{EXPERIMENTS}/{exp_id}"), 404)
