"""In-process tests of an experiment's lifecycle: every legal and illegal move of the state machine,
what each move sets, scheduled starts, group disabling, restart as new, the fields that lock once an
experiment has started, and the quality score with hand-computed numbers.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_experiments_lifecycle.py`. Helpers and the `console` fixture come from the family's
main `*_api.py` module.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.functional.test_experiments_api import (
    EXPERIMENTS,
    Console,
    assert_error,
    console,
    country,
    groups,
    metric,
    rule,
    uid,
)

__all__ = ["console"]  # the fixture, re-exported so that pytest finds it in this module

THREE_GROUPS = [
    {"name": "Control", "id": "control", "size": 34},
    {"name": "A", "id": "a", "size": 33},
    {"name": "B", "id": "b", "size": 33},
]


def in_state(console: Console, state: str, **fields: Any) -> dict[str, Any]:
    """A new experiment (three groups, control first) brought to `state` through the API."""
    exp = console.create(groups=THREE_GROUPS, **fields)
    if state in ("active", "decision_made", "abandoned"):
        exp = console.act(exp["id"], "start")
    if state == "decision_made":
        exp = console.act(exp["id"], "make_decision", {"id": "a", "decisionReason": "A wins"})
    if state == "abandoned":
        exp = console.act(exp["id"], "abandon", {"decisionReason": "broken"})
    if state == "archived":
        exp = console.act(exp["id"], "archive", {"archiveReason": "not needed"})
    assert exp["status"] == state
    return exp


def future_ms(seconds: float) -> int:
    return int((time.time() + seconds) * 1000)


def test_start_sets_start_time(console: Console) -> None:
    exp = console.create()
    before = int(time.time() * 1000)
    started = console.act(exp["id"], "start")
    assert started["status"] == "active"
    assert before - 1000 <= started["startTime"] <= int(time.time() * 1000) + 1000
    assert started["endTime"] is None and started["decisionTime"] is None
    assert started["lastModifiedTime"] >= exp["lastModifiedTime"]


def test_start_body_stores_the_analysis_end_time(console: Console) -> None:
    exp = console.create(isAnalysisOnly=True)
    started = console.act(
        exp["id"], "start", {"analysisStartTime": "2024-10-01", "analysisEndTime": "2024-10-30"}
    )
    assert started["analysisEndTime"] == "2024-10-30"
    other = console.create()
    assert_error(console.put(f"{EXPERIMENTS}/{other['id']}/start", json={"colour": 1}), 400, "colour")
    assert console.experiment(other["id"])["status"] == "setup"


def test_make_decision_with_remove_targeting_drops_the_targeting(console: Console) -> None:
    gate_id = console.create_gate()
    exp = in_state(console, "active", targetingGateID=gate_id, inlineTargetingRules=[rule(50, country())])
    decided = console.act(
        exp["id"], "make_decision", {"id": "a", "decisionReason": "ship", "removeTargeting": True}
    )
    assert decided["targetingGateID"] is None
    assert decided["inlineTargetingRules"] == [] and decided["inlineTargetingRulesJSON"] == "[]"


def test_make_decision_keeps_targeting_by_default(console: Console) -> None:
    gate_id = console.create_gate()
    exp = in_state(console, "active", targetingGateID=gate_id)
    decided = console.act(exp["id"], "make_decision", {"id": "a", "decisionReason": "ship"})
    assert decided["targetingGateID"] == gate_id


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"id": "nope", "decisionReason": "r"}, "id", id="unknown-group"),
        pytest.param({"id": "A", "decisionReason": "r"}, "id", id="group-name-not-id"),
        pytest.param({"decisionReason": "r"}, "id", id="no-group"),
        pytest.param({"id": "a"}, "decisionReason", id="no-reason"),
        pytest.param(
            {"id": "a", "decisionReason": "r", "removeTargeting": "yes"}, "removeTargeting", id="flag-string"
        ),
    ],
)
def test_make_decision_bad_body_is_400(console: Console, body: dict[str, Any], field: str) -> None:
    exp = in_state(console, "active")
    assert_error(console.put(f"{EXPERIMENTS}/{exp['id']}/make_decision", json=body), 400, field)
    assert console.experiment(exp["id"]) == exp


def test_abandon_sets_reason_and_times(console: Console) -> None:
    exp = in_state(console, "active")
    abandoned = console.act(exp["id"], "abandon", {"decisionReason": "bug in variant"})
    assert abandoned["status"] == "abandoned"
    assert abandoned["decisionReason"] == "bug in variant"
    assert abandoned["launchedGroupID"] is None
    assert abandoned["decisionTime"] == abandoned["endTime"] is not None
    running = in_state(console, "active")
    assert_error(console.put(f"{EXPERIMENTS}/{running['id']}/abandon", json={}), 400, "decisionReason")
    assert console.experiment(running["id"]) == running


@pytest.mark.parametrize("state", ["active", "decision_made", "abandoned"])
def test_reset_goes_back_to_setup_keeping_the_design(console: Console, state: str) -> None:
    exp = in_state(console, state, hypothesis="keep me", tags=["kept"])
    reset = console.act(exp["id"], "reset")
    assert reset["status"] == "setup"
    for field in ("startTime", "endTime", "decisionTime", "launchedGroupID", "decisionReason"):
        assert reset[field] is None, field
    assert reset["groups"] == exp["groups"] and reset["hypothesis"] == "keep me" and reset["tags"] == ["kept"]
    # It can run again.
    assert console.act(exp["id"], "start")["status"] == "active"


def test_archive_without_a_body_and_archived_edits_are_refused(console: Console) -> None:
    exp = console.create()
    path = f"{EXPERIMENTS}/{exp['id']}"
    assert console.put(f"{path}/archive").status_code == 200
    body = assert_error(console.patch(path, json={"description": "x"}), 400, "status")
    assert "archived" in body["message"]
    assert_error(console.post(f"{path}/disable_groups", json={"group_names": ["Test"]}), 400, "status")
    assert console.delete(path).status_code == 200  # an archived experiment may be deleted
    assert_error(console.get(path), 404)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param({"scheduledTime": "PAST"}, "scheduledTime", id="in-the-past"),
        pytest.param({"scheduledTime": "YEAR+"}, "scheduledTime", id="more-than-a-year-ahead"),
        pytest.param({"scheduledTime": "FRACTION"}, "scheduledTime", id="fraction-of-a-millisecond"),
        pytest.param({"scheduledTime": "2030-01-01"}, "scheduledTime", id="string"),
        pytest.param({}, "scheduledTime", id="missing"),
    ],
)
def test_schedule_start_bad_time_is_400(console: Console, body: dict[str, Any], field: str) -> None:
    exp = console.create()
    value = body.get("scheduledTime")
    if value == "PAST":
        body = {"scheduledTime": future_ms(-60)}
    elif value == "YEAR+":
        body = {"scheduledTime": future_ms(366 * 86400)}
    elif value == "FRACTION":
        body = {"scheduledTime": future_ms(3600) + 0.5}
    assert_error(console.post(f"{EXPERIMENTS}/{exp['id']}/schedule_start", json=body), 400, field)
    assert console.experiment(exp["id"]) == exp


def test_schedule_start_just_inside_a_year_is_accepted(console: Console) -> None:
    exp = console.create()
    when = future_ms(365 * 86400 - 60)
    assert (
        console.act(exp["id"], "schedule_start", {"scheduledTime": when}, method="POST")["scheduledStartTime"]
        == when
    )


@pytest.mark.parametrize(
    ("action", "names", "field"),
    [
        pytest.param("disable_groups", ["Control"], "group_names[0]", id="control"),
        pytest.param("disable_groups", ["A", "Nope"], "group_names[1]", id="unknown-name"),
        pytest.param("enable_groups", ["Nope"], "group_names[0]", id="enable-unknown-name"),
        pytest.param("disable_groups", ["A", "B"], "group_names", id="all-but-control"),
        pytest.param("disable_groups", [], "group_names", id="empty-list"),
        pytest.param("disable_groups", "A", "group_names", id="not-a-list"),
    ],
)
def test_bad_group_names_are_400(console: Console, action: str, names: Any, field: str) -> None:
    exp = in_state(console, "active")
    assert_error(console.post(f"{EXPERIMENTS}/{exp['id']}/{action}", json={"group_names": names}), 400, field)
    assert console.experiment(exp["id"]) == exp


def test_explicit_control_group_cannot_be_disabled_but_the_first_can(console: Console) -> None:
    exp = console.create(groups=THREE_GROUPS, controlGroupID="b")
    path = f"{EXPERIMENTS}/{exp['id']}/disable_groups"
    assert_error(console.post(path, json={"group_names": ["B"]}), 400, "group_names[0]")
    resp = console.post(path, json={"group_names": ["Control"]})
    assert resp.status_code == 200, resp.text


def test_disabled_groups_survive_a_full_update_sent_back_as_read(console: Console) -> None:
    exp = in_state(console, "active")
    disabled = console.act(exp["id"], "disable_groups", {"group_names": ["A"]}, method="POST")
    body = {
        k: disabled[k]
        for k in (
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
    }
    resp = console.post(f"{EXPERIMENTS}/{exp['id']}", json={**body, "description": "notes"})
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["description"] == "notes"
    assert updated["groups"] == disabled["groups"]


def test_restart_as_new_with_a_taken_name_is_409_and_bad_name_400(console: Console) -> None:
    exp = in_state(console, "active")
    taken = console.create()
    assert_error(console.post(f"{EXPERIMENTS}/{exp['id']}/restart_as_new", json={"name": taken["id"]}), 409)
    assert_error(console.post(f"{EXPERIMENTS}/{exp['id']}/restart_as_new", json={"name": "x"}), 400, "name")
    assert_error(console.post(f"{EXPERIMENTS}/{exp['id']}/restart_as_new", json={}), 400, "name")


@pytest.mark.parametrize(
    ("method", "action", "body"),
    [
        ("PUT", "start", None),
        ("PUT", "make_decision", {"id": "a", "decisionReason": "r"}),
        ("PUT", "abandon", {"decisionReason": "r"}),
        ("PUT", "reset", None),
        ("PUT", "archive", None),
        ("PUT", "unarchive", None),
        ("POST", "restart_as_new", {"name": "whatever name"}),
        ("POST", "schedule_start", {"scheduledTime": 4_102_444_800_000}),
        ("POST", "disable_groups", {"group_names": ["A"]}),
        ("POST", "enable_groups", {"group_names": ["A"]}),
    ],
)
def test_actions_on_an_unknown_experiment_are_404(
    console: Console, method: str, action: str, body: Any
) -> None:
    assert_error(console.call(method, f"{EXPERIMENTS}/missing_{uid()}/{action}", json=body), 404)


# --- editable by state ----------------------------------------------------------------------------

LOCKED = [
    pytest.param({"groups": groups(50, 30, 20, names=("Control", "A", "B"))}, "groups", id="groups"),
    pytest.param({"allocation": 50}, "allocation", id="allocation"),
    pytest.param({"userBuckets": [1, 2]}, "userBuckets", id="userBuckets"),
    pytest.param({"idType": "stableID"}, "idType", id="idType"),
    pytest.param({"controlGroupID": "a"}, "controlGroupID", id="controlGroupID"),
    pytest.param({"experimentType": "GEO"}, "experimentType", id="experimentType"),
    pytest.param({"status": "setup"}, "status", id="status"),
    pytest.param({"launchedGroupID": "a"}, "launchedGroupID", id="launchedGroupID"),
]


@pytest.mark.parametrize(("fields", "field"), LOCKED[:6])
def test_design_is_editable_in_setup(console: Console, fields: dict[str, Any], field: str) -> None:
    exp = console.create(groups=THREE_GROUPS)
    resp = console.patch(f"{EXPERIMENTS}/{exp['id']}", json=fields)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    if field == "groups":
        assert [g["size"] for g in data["groups"]] == [50, 30, 20]
    else:
        assert data[field] == fields[field]


def test_launched_group_cannot_be_set_in_setup(console: Console) -> None:
    exp = console.create(groups=THREE_GROUPS)
    body = assert_error(
        console.patch(f"{EXPERIMENTS}/{exp['id']}", json={"launchedGroupID": "a"}), 400, "launchedGroupID"
    )
    assert "setup" in body["message"]


def test_started_experiment_accepts_its_locked_fields_sent_back_unchanged_and_other_edits(
    console: Console,
) -> None:
    exp = in_state(console, "active")
    same = {f: exp[f] for f in ("groups", "allocation", "userBuckets", "idType", "experimentType", "status")}
    edits = {
        "description": "running notes",
        "hypothesis": "still testing",
        "primaryMetrics": [metric()],
        "sequentialTesting": True,
        "tags": ["running"],
        "inlineTargetingRules": [rule(100, country("CA"))],
    }
    resp = console.patch(f"{EXPERIMENTS}/{exp['id']}", json={**same, **edits})
    assert resp.status_code == 200, resp.text
    patched = resp.json()["data"]
    assert patched["status"] == "active" and patched["groups"] == exp["groups"]
    for key, value in edits.items():
        if key != "inlineTargetingRules":
            assert patched[key] == value, key


# --- quality score, hand-computed -----------------------------------------------------------------

# Five of the eight default checks pass for this design:
#   HYPOTHESIS_LENGTH      PASSED (46 characters >= 20)
#   BALANCED_EXPOSURE      PASSED (50/50)
#   PRIMARY_METRICS_LENGTH PASSED (1 primary metric)
#   COMPARISON_CORRECTION  PASSED (2 groups x 1 metric = 1 comparison)
#   GUARDRAIL_METRIC_TAGS  FAILED (no secondary metric tags)
#   SUFFICIENT_SAMPLE      PASSED (14 days, both groups get traffic)
#   POWER_ANALYSIS         FAILED (no targetExposures)
#   SEQUENTIAL_TESTING     FAILED (off)
DESIGN = {
    "hypothesis": "Users who see the new checkout buy more often.",
    "primaryMetrics": [metric("purchase", "event_count", hypothesizedValue=0.05)],
    "duration": 14,
}


def _breakdown(exp: dict[str, Any]) -> dict[str, tuple[str, Any, Any]]:
    return {c["criterion"]: (c["status"], c["score"], c["weight"]) for c in exp["qualityScore"]["breakdown"]}


def test_default_quality_score(console: Console) -> None:
    exp = console.create(**DESIGN)
    # 8 criteria of weight 12.5; 5 pass with score 100: 5 * 12.5 * 100 / 100 = 62.5.
    assert exp["qualityScore"]["score"] == 62.5
    assert _breakdown(exp) == {
        "HYPOTHESIS_LENGTH": ("PASSED", 100, 12.5),
        "BALANCED_EXPOSURE": ("PASSED", 100, 12.5),
        "PRIMARY_METRICS_LENGTH": ("PASSED", 100, 12.5),
        "COMPARISON_CORRECTION": ("PASSED", 100, 12.5),
        "GUARDRAIL_METRIC_TAGS": ("FAILED", 0, 12.5),
        "SUFFICIENT_SAMPLE": ("PASSED", 100, 12.5),
        "POWER_ANALYSIS": ("FAILED", 0, 12.5),
        "SEQUENTIAL_TESTING": ("FAILED", 0, 12.5),
    }


def test_manual_quality_scores_are_merged_and_renormalised(console: Console) -> None:
    manual = [
        # Removes a default check.
        {
            "criteriaName": "HYPOTHESIS_LENGTH",
            "status": "FAILED",
            "criteriaDescription": "x",
            "score": 0,
            "weight": 0,
        },
        # Re-weights a default check: its status (FAILED) and score (0) stay its own.
        {
            "criteriaName": "SEQUENTIAL_TESTING",
            "status": "PASSED",
            "criteriaDescription": "x",
            "score": 100,
            "weight": 25,
        },
        # A check of our own.
        {
            "criteriaName": "DESIGN_REVIEW",
            "status": "WARNING",
            "criteriaDescription": "Reviewed once",
            "score": 40,
            "weight": 25,
        },
    ]
    exp = console.create(**DESIGN, manualQualityScores=manual)
    # Weights before: six defaults at 12.5 (75) + 25 + 25 = 125; renormalised by 100/125 = 0.8:
    # each default 10, SEQUENTIAL_TESTING 20, DESIGN_REVIEW 20.
    # Score: 10*100 (balanced) + 10*100 (primary) + 10*100 (comparison) + 10*0 (guardrail)
    #      + 10*100 (sample) + 10*0 (power) + 20*0 (sequential) + 20*40 (design review) = 4800; / 100 = 48.
    assert _breakdown(exp) == {
        "BALANCED_EXPOSURE": ("PASSED", 100, 10),
        "PRIMARY_METRICS_LENGTH": ("PASSED", 100, 10),
        "COMPARISON_CORRECTION": ("PASSED", 100, 10),
        "GUARDRAIL_METRIC_TAGS": ("FAILED", 0, 10),
        "SUFFICIENT_SAMPLE": ("PASSED", 100, 10),
        "POWER_ANALYSIS": ("FAILED", 0, 10),
        "SEQUENTIAL_TESTING": ("FAILED", 0, 20),
        "DESIGN_REVIEW": ("WARNING", 40, 20),
    }
    assert exp["qualityScore"]["score"] == 48
    review = next(c for c in exp["qualityScore"]["breakdown"] if c["criterion"] == "DESIGN_REVIEW")
    assert review["passingDescription"] == "Reviewed once"
    sequential = next(c for c in exp["qualityScore"]["breakdown"] if c["criterion"] == "SEQUENTIAL_TESTING")
    assert sequential["passingDescription"] != "x"
    assert exp["manualQualityScores"] == manual


def test_quality_score_follows_updates(console: Console) -> None:
    exp = console.create(**DESIGN)
    path = f"{EXPERIMENTS}/{exp['id']}"
    # Passing the three failing checks: 8 of 8 pass.
    resp = console.patch(
        path,
        json={"secondaryMetricTags": ["guardrails"], "targetExposures": 10_000, "sequentialTesting": True},
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["qualityScore"]["score"] == 100
    # Only the custom criterion left, at 60%: the score is 60.
    only_custom = [
        {"criteriaName": n, "status": "PASSED", "criteriaDescription": "", "score": 0, "weight": 0}
        for n in (
            "HYPOTHESIS_LENGTH",
            "BALANCED_EXPOSURE",
            "PRIMARY_METRICS_LENGTH",
            "COMPARISON_CORRECTION",
            "GUARDRAIL_METRIC_TAGS",
            "SUFFICIENT_SAMPLE",
            "POWER_ANALYSIS",
            "SEQUENTIAL_TESTING",
        )
    ] + [
        {"criteriaName": "MINE", "status": "WARNING", "criteriaDescription": "mine", "score": 60, "weight": 3}
    ]
    resp = console.patch(path, json={"manualQualityScores": only_custom})
    assert resp.status_code == 200, resp.text
    quality = resp.json()["data"]["qualityScore"]
    assert quality == {
        "score": 60,
        "breakdown": [
            {
                "criterion": "MINE",
                "status": "WARNING",
                "passingDescription": "mine",
                "score": 60,
                "weight": 100,
            }
        ],
    }
