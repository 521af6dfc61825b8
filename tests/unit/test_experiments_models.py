"""Experiment request models and design checks, without the HTTP layer: every limit at its edge,
strict types, null handling, the full-update requirements, the list query, the cross-field
design checks, and the derived staleness and scheduled start."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from expconsole.models.experiments import ExperimentListQuery, design_errors
from expconsole.models.experiments_requests import (
    ExperimentCreate,
    ExperimentPatch,
    ExperimentUpdate,
    GroupNamesBody,
    MakeDecisionBody,
    ScheduleStartBody,
)
from expconsole.services.experiments import DAY_MS, effective, is_stale


def locs(exc: ValidationError) -> set[str]:
    out = set()
    for error in exc.errors():
        text = ""
        for part in error["loc"]:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
        out.add(text)
    return out


def create(**fields: Any) -> ExperimentCreate:
    return ExperimentCreate.model_validate({"name": "valid name", **fields})


def refused(model: Any, body: dict[str, Any]) -> set[str]:
    with pytest.raises(ValidationError) as info:
        model.model_validate(body)
    return locs(info.value)


# --- limits ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "abc"},
        {"name": "n" * 100},
        {"name": "a_b-c 1"},
        {"id": "abc"},
        {"id": "i" * 100},
        {"description": "d" * 1000},
        {"allocation": 0},
        {"allocation": 100},
        {"allocation": 99.99},
        {"userBuckets": [0, 999, 999.99]},
        {"duration": 2},
        {"targetExposures": 2},
        {"allocationDuration": 2},
        {"allocationDuration": None},
        {"cohortedAnalysisDuration": 2},
        {"fixedAnalysisDuration": 2},
        {"scheduledReloadHour": 0},
        {"scheduledReloadHour": 23},
        {"scheduledReloadHour": None},
        {"scheduledReloadDays": [0, 6]},
        {"scheduledReloadDays": None},
        {"defaultRollupWindow": -1},
        {"defaultRollupWindow": 1},
        {"defaultRollupWindow": 7},
        {"defaultConfidenceInterval": "80"},
        {"defaultConfidenceInterval": "99"},
        {
            "manualQualityScores": [
                {
                    "criteriaName": f"c{i}",
                    "status": "PASSED",
                    "criteriaDescription": "",
                    "score": 0,
                    "weight": 0,
                }
                for i in range(10)
            ]
        },
        {"groups": [{"name": "a", "size": 0}, {"name": "b", "size": 100}]},
        {"defaultSPRTPowerParam": 0.01},
        {"defaultSPRTPowerParam": 99.99},
        {"defaultChanceToBeatThreshold": 0},
        {"defaultChanceToBeatThreshold": 100},
        {"targetApps": "web"},
    ],
)
def test_values_just_inside_the_limits_validate(fields: dict[str, Any]) -> None:
    body = create(**fields).changes()
    for key, value in fields.items():
        if key == "targetApps":
            assert body[key] == [value]
        elif key not in ("groups", "manualQualityScores"):
            assert body[key] == value


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"name": "ab"}, "name"),
        ({"name": "n" * 101}, "name"),
        ({"name": "a.b"}, "name"),
        ({"name": "   "}, "name"),
        ({"id": "ab"}, "id"),
        ({"id": "i" * 101}, "id"),
        ({"id": "a b"}, "id"),
        ({"description": "d" * 1001}, "description"),
        ({"allocation": -0.001}, "allocation"),
        ({"allocation": 100.001}, "allocation"),
        ({"allocation": "50"}, "allocation"),
        ({"allocation": True}, "allocation"),
        ({"userBuckets": [1000]}, "userBuckets[0]"),
        ({"userBuckets": [0, -0.5]}, "userBuckets[1]"),
        ({"duration": 1}, "duration"),
        ({"duration": 2.0}, "duration"),
        ({"duration": "14"}, "duration"),
        ({"targetExposures": 1}, "targetExposures"),
        ({"allocationDuration": 1}, "allocationDuration"),
        ({"cohortedAnalysisDuration": 1}, "cohortedAnalysisDuration"),
        ({"fixedAnalysisDuration": 1}, "fixedAnalysisDuration"),
        ({"scheduledReloadHour": 24}, "scheduledReloadHour"),
        ({"scheduledReloadHour": -1}, "scheduledReloadHour"),
        ({"scheduledReloadDays": [7]}, "scheduledReloadDays[0]"),
        ({"scheduledReloadDays": [0, 1, 2, 3, 4, 5, 6, 0]}, "scheduledReloadDays"),
        ({"defaultRollupWindow": 0}, "defaultRollupWindow"),
        ({"defaultRollupWindow": True}, "defaultRollupWindow"),
        ({"defaultRollupWindow": 1.0}, "defaultRollupWindow"),
        ({"defaultRollupWindow": 30}, "defaultRollupWindow"),
        ({"defaultConfidenceInterval": 95}, "defaultConfidenceInterval"),
        ({"defaultConfidenceInterval": "97"}, "defaultConfidenceInterval"),
        ({"identifierMappingMode": "x"}, "identifierMappingMode"),
        ({"experimentType": "AB"}, "experimentType"),
        ({"analyticsType": "Bayesian"}, "analyticsType"),
        ({"sprtBaselineMode": "control"}, "sprtBaselineMode"),
        ({"scheduledReloadType": "daily"}, "scheduledReloadType"),
        ({"status": "running"}, "status"),
        (
            {
                "manualQualityScores": [
                    {
                        "criteriaName": f"c{i}",
                        "status": "PASSED",
                        "criteriaDescription": "",
                        "score": 0,
                        "weight": 0,
                    }
                    for i in range(11)
                ]
            },
            "manualQualityScores",
        ),
        ({"groups": [{"name": "a", "size": 50}]}, "groups"),
        ({"groups": [{"name": "a", "size": -1}, {"name": "b", "size": 101}]}, "groups[0].size"),
        ({"groups": [{"name": "", "size": 50}, {"name": "b", "size": 50}]}, "groups[0].name"),
        (
            {"groups": [{"name": "a", "size": 50, "id": "has space"}, {"name": "b", "size": 50}]},
            "groups[0].id",
        ),
        ({"defaultSPRTPowerParam": 0}, "defaultSPRTPowerParam"),
        ({"defaultSPRTPowerParam": 100}, "defaultSPRTPowerParam"),
        ({"defaultSPRTMDE": -0.1}, "defaultSPRTMDE"),
        ({"defaultChanceToBeatThreshold": 100.5}, "defaultChanceToBeatThreshold"),
        (
            {"primaryMetrics": [{"name": "m", "type": "sum", "direction": "up"}]},
            "primaryMetrics[0].direction",
        ),
        ({"links": [{"url": "example.com"}]}, "links[0].url"),
        ({"externalEvents": [{"name": "e", "timestamp": -1}]}, "externalEvents[0].timestamp"),
        ({"tags": None}, "tags"),
        ({"groups": None}, "groups"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_values_just_outside_the_limits_are_refused_naming_the_field(
    fields: dict[str, Any], where: str
) -> None:
    assert where in refused(ExperimentCreate, {"name": "valid name", **fields})


def test_name_is_required_on_create() -> None:
    assert "name" in refused(ExperimentCreate, {})


def test_nullable_fields_take_null() -> None:
    body = create(
        team=None,
        teamID=None,
        layerID=None,
        targetingGateID=None,
        launchedGroupID=None,
        decisionReason=None,
        secondaryIDType=None,
        controlGroupID=None,
        stratifiedSampling=None,
    ).changes()
    assert body["team"] is None and body["controlGroupID"] is None


def test_changes_are_only_the_fields_sent_and_nested_unset_fields_are_left_out() -> None:
    body = create(primaryMetrics=[{"name": "m", "type": "sum"}], links=[{"url": "https://x.y"}]).changes()
    assert body == {
        "name": "valid name",
        "primaryMetrics": [{"name": "m", "type": "sum"}],
        "links": [{"url": "https://x.y"}],
    }


# --- updates --------------------------------------------------------------------------------------

FULL = {
    "description": "",
    "idType": "userID",
    "hypothesis": "",
    "groups": [{"name": "a", "size": 50}, {"name": "b", "size": 50}],
    "allocation": 100,
    "targetingGateID": None,
    "bonferroniCorrection": False,
    "defaultConfidenceInterval": "95",
    "status": "setup",
}


def test_full_update_requires_the_peers_fields() -> None:
    assert refused(ExperimentUpdate, {}) == set(FULL)


def test_full_update_with_the_required_fields_validates_and_keeps_null_gate() -> None:
    body = ExperimentUpdate.model_validate(FULL).changes()
    assert body["targetingGateID"] is None and "version" not in body


@pytest.mark.parametrize("field", sorted(FULL))
def test_full_update_misses_each_required_field(field: str) -> None:
    body = {k: v for k, v in FULL.items() if k != field}
    assert refused(ExperimentUpdate, body) == {field}


def test_patch_takes_any_subset_and_a_version() -> None:
    assert ExperimentPatch.model_validate({"version": 3}).changes() == {"version": 3}
    assert "version" in refused(ExperimentPatch, {"version": 0})
    assert "id" in refused(ExperimentPatch, {"id": "new_id"})


# --- action bodies --------------------------------------------------------------------------------


def test_action_bodies() -> None:
    decision = MakeDecisionBody.model_validate({"id": "g", "decisionReason": "r"})
    assert decision.removeTargeting is False
    assert refused(MakeDecisionBody, {"decisionReason": "r"}) == {"id"}
    assert refused(GroupNamesBody, {"group_names": []}) == {"group_names"}
    assert refused(GroupNamesBody, {"group_names": "a"}) == {"group_names"}
    assert ScheduleStartBody.model_validate({"scheduledTime": 1.5e12}).scheduledTime == 1.5e12
    assert refused(ScheduleStartBody, {"scheduledTime": "2030-01-01"}) == {"scheduledTime"}


# --- list query -----------------------------------------------------------------------------------


def test_list_query_dates_and_flags() -> None:
    query = ExperimentListQuery.model_validate(
        {"createdStartDate": "2024-02-29", "isStale": "true", "status": ["active", "setup"]}
    )
    assert query.isStale is True and query.createdStartDate == "2024-02-29"
    assert ExperimentListQuery.model_validate({}).isStale is False
    for bad in ("2023-02-29", "2024-1-01", "20240101", "yesterday"):
        assert "createdStartDate" in refused(ExperimentListQuery, {"createdStartDate": bad})
    assert "isStale" in refused(ExperimentListQuery, {"isStale": "yes"})
    assert "status[0]" in refused(ExperimentListQuery, {"status": ["paused"]})


# --- design checks --------------------------------------------------------------------------------


def group(name: str, size: float, gid: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "id": gid or name.lower(), "size": size, **extra}


def design(**fields: Any) -> dict[str, Any]:
    return {"groups": [group("Control", 50), group("Test", 50)], **fields}


def error_fields(doc: dict[str, Any]) -> list[str]:
    return [e["field"] for e in design_errors(doc)]


def test_a_sound_design_has_no_errors() -> None:
    assert design_errors(design(controlGroupID="control", launchedGroupID="test")) == []


@pytest.mark.parametrize(
    ("sizes", "ok"),
    [
        ((50, 50), True),
        ((33.33, 33.33, 33.34), True),
        ((50, 49.99), False),
        ((50, 50.01), False),
        ((0, 100), True),
    ],
)
def test_group_sizes_sum_to_100(sizes: tuple[float, ...], ok: bool) -> None:
    doc = {"groups": [group(f"g{i}", s) for i, s in enumerate(sizes)]}
    assert error_fields(doc) == ([] if ok else ["groups"])


def test_group_names_unique_ignoring_case_and_ids_unique() -> None:
    doc = {"groups": [group("Control", 50, "a"), group("control", 25, "b"), group("Other", 25, "a")]}
    assert error_fields(doc) == ["groups[1].name", "groups[2].id"]


def test_fewer_than_two_groups() -> None:
    assert error_fields({"groups": [group("Only", 100)]}) == ["groups"]


def test_control_and_launched_groups_must_be_groups() -> None:
    assert error_fields(design(controlGroupID="nope", launchedGroupID="nada")) == [
        "controlGroupID",
        "launchedGroupID",
    ]


def test_a_metric_appears_once_across_the_lists() -> None:
    metric = {"name": "m", "type": "sum"}
    doc = design(
        primaryMetrics=[metric], secondaryMetrics=[{"name": "n", "type": "sum"}], otherMetrics=[metric]
    )
    assert error_fields(doc) == ["otherMetrics[0]"]


def test_manual_quality_criteria_are_unique() -> None:
    entry = {"criteriaName": "X", "status": "PASSED", "criteriaDescription": "", "score": 1, "weight": 1}
    assert error_fields(design(manualQualityScores=[entry, entry])) == ["manualQualityScores[1].criteriaName"]


SPRT_METRICS = {"primaryMetrics": [{"name": "m", "type": "sum"}]}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({}, ["sprtBaselineMode"], id="no-mode"),
        pytest.param({"sprtBaselineMode": "manual"}, ["sprtMDESettings"], id="manual-nothing"),
        pytest.param(
            {"sprtBaselineMode": "manual", "defaultSPRTMDE": 1},
            ["sprtMDESettings"],
            id="manual-default-mde-only",
        ),
        pytest.param(
            {
                "sprtBaselineMode": "manual",
                "sprtMDESettings": [
                    {"metricKey": "m::sum", "groupSettings": [{"groupKey": "test", "mde": 1}]}
                ],
            },
            ["sprtMDESettings[0].groupSettings[0].mean", "sprtMDESettings[0].groupSettings[0].stdDev"],
            id="manual-mde-only",
        ),
        pytest.param(
            {
                "sprtBaselineMode": "manual",
                "sprtMDESettings": [
                    {
                        "metricKey": "m::sum",
                        "groupSettings": [{"groupKey": "Test", "mde": 1, "mean": 0, "stdDev": 1}],
                    }
                ],
            },
            [],
            id="manual-complete-by-group-name",
        ),
        pytest.param({"sprtBaselineMode": "in_experiment_control"}, ["sprtMDESettings"], id="iec-nothing"),
        pytest.param(
            {"sprtBaselineMode": "in_experiment_control", "defaultSPRTMDE": 0.1}, [], id="iec-default"
        ),
        pytest.param(
            {
                "sprtBaselineMode": "in_experiment_control",
                "sprtMDESettings": [{"metricKey": "m::sum", "groupSettings": [{"groupKey": "test"}]}],
            },
            ["sprtMDESettings[0].groupSettings[0].mde"],
            id="iec-group-without-mde",
        ),
        pytest.param(
            {
                "sprtBaselineMode": "in_experiment_control",
                "sprtMDESettings": [
                    {"metricKey": "m::sum", "groupSettings": [{"groupKey": "test", "mde": 2}]}
                ],
            },
            [],
            id="iec-complete",
        ),
    ],
)
def test_sprt_settings_complete_for_the_mode(fields: dict[str, Any], expected: list[str]) -> None:
    assert error_fields(design(analyticsType="sprt", **SPRT_METRICS, **fields)) == expected


def test_sprt_settings_are_not_required_for_other_analyses_but_must_still_name_real_things() -> None:
    assert error_fields(design(analyticsType="frequentist", **SPRT_METRICS)) == []
    settings = [
        {"metricKey": "x::sum", "groupSettings": []},
        {"metricKey": "m::sum", "groupSettings": [{"groupKey": "ghost", "mde": 1}]},
    ]
    assert error_fields(design(**SPRT_METRICS, sprtMDESettings=settings)) == [
        "sprtMDESettings[0].metricKey",
        "sprtMDESettings[1].groupSettings[0].groupKey",
    ]


# --- staleness and scheduled starts ---------------------------------------------------------------

T0 = 1_700_000_000_000


@pytest.mark.parametrize(
    ("doc", "now", "stale"),
    [
        pytest.param(
            {"status": "active", "startTime": T0, "duration": 14},
            T0 + 21 * DAY_MS,
            False,
            id="active-at-grace",
        ),
        pytest.param(
            {"status": "active", "startTime": T0, "duration": 14},
            T0 + 21 * DAY_MS + 1,
            True,
            id="active-past",
        ),
        pytest.param(
            {"status": "decision_made", "decisionTime": T0}, T0 + 30 * DAY_MS, False, id="decided-30-days"
        ),
        pytest.param(
            {"status": "decision_made", "decisionTime": T0}, T0 + 30 * DAY_MS + 1, True, id="decided-long-ago"
        ),
        pytest.param({"status": "abandoned", "endTime": T0}, T0 + 31 * DAY_MS, True, id="abandoned-long-ago"),
        pytest.param(
            {"status": "archived", "decisionTime": T0}, T0 + 365 * DAY_MS, False, id="archived-never"
        ),
        pytest.param({"status": "setup", "createdTime": T0}, T0 + 90 * DAY_MS, False, id="setup-90-days"),
        pytest.param(
            {"status": "setup", "createdTime": T0}, T0 + 90 * DAY_MS + 1, True, id="setup-forgotten"
        ),
        pytest.param(
            {"status": "setup", "createdTime": T0, "scheduledStartTime": T0 + 200 * DAY_MS},
            T0 + 100 * DAY_MS,
            False,
            id="setup-scheduled",
        ),
    ],
)
def test_is_stale(doc: dict[str, Any], now: int, stale: bool) -> None:
    assert is_stale(doc, now) is stale


def test_a_passed_scheduled_start_has_happened() -> None:
    doc = {"status": "setup", "scheduledStartTime": T0, "startTime": None}
    assert effective(doc, T0 - 1) is doc
    started = effective(doc, T0)
    assert started["status"] == "active" and started["startTime"] == T0
    assert "scheduledStartTime" not in started
    assert doc["status"] == "setup"  # the stored document is not changed by reading
