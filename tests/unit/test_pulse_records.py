"""Pulse's stored records, typed (models/pulse.py): load history records and the health document.

Both are stored (store.pulse_runs, an experiment's `_health`) and answered as stored, so every
shape a version ever wrote must read, answer and write back key for key: the load record since
the first pulse version (no `progress`, failure messages naming the exception), with `progress`
while a queued load runs, keys in other orders or unknown; the health document before
never-logged metrics existed (no `neverLoggedMetrics`) and after, and with keys or checks this
version does not know.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from expconsole.models.pulse import MetricsMetadata, OtherMetadata, PulseHealth, PulseLoadRecord
from expconsole.services.pulse import run
from expconsole.services.pulse.analyse import AnalysisHealth, HealthGroup
from expconsole.services.pulse.plan import EntityPlan, MetricPlan

STARTED = {
    "creatorName": "Console API",
    "createdTime": 1_773_100_000_000,
    "finishedTime": None,
    "finishedState": None,
    "startDs": "2026-03-01",
    "endDs": "2026-03-10",
    "reloadType": "full",
    "turboMode": False,
}
SUCCEEDED = {**STARTED, "finishedTime": 1_773_100_009_000, "finishedState": "success", "endDs": "2026-03-09"}
# Before failure messages were sanitised (the first version): the exception's type and text.
FAILED_FIRST_VERSION = {
    **STARTED,
    "finishedTime": 1_773_100_009_000,
    "finishedState": "failure",
    "message": "KeyError: 'units'",
}
FAILED = {**FAILED_FIRST_VERSION, "message": "Storage was unavailable during the load; retry it."}
QUEUED_WITH_PROGRESS = {
    **STARTED,
    "creatorName": "Scheduled reload",
    "reloadType": "incremental",
    "progress": {"step": "events 2026-03-04", "done": 3, "total": 20},
}

AFTER_TURBO = {k: v for k, v in SUCCEEDED.items() if k != "turboMode"}


def stored(doc: dict[str, Any]) -> str:
    """A record as store.pulse_runs writes it."""
    return json.dumps(doc, separators=(",", ":"))


@pytest.mark.parametrize(
    ("doc", "answered"),
    [
        (STARTED, {**STARTED, "running": True, "progress": None}),
        (SUCCEEDED, {**SUCCEEDED, "running": False, "progress": None}),
        (FAILED_FIRST_VERSION, {**FAILED_FIRST_VERSION, "running": False, "progress": None}),
        (FAILED, {**FAILED, "running": False, "progress": None}),
        # A queued load's progress stays where it was stored; `running` follows it.
        (QUEUED_WITH_PROGRESS, {**QUEUED_WITH_PROGRESS, "running": True}),
        # A finished record that kept a progress key: answered null in its place.
        (
            {**SUCCEEDED, "progress": {"step": "done", "done": 1, "total": 1}},
            {**SUCCEEDED, "progress": None, "running": False},
        ),
        # Keys this version does not know, and another order: kept, and answered.
        (
            {"turboMode": True, "retries": 2, **AFTER_TURBO},
            {"turboMode": True, "retries": 2, **AFTER_TURBO, "running": False, "progress": None},
        ),
    ],
)
def test_every_stored_load_record_reads_writes_back_and_answers_as_stored(
    doc: dict[str, Any], answered: dict[str, Any]
) -> None:
    record = PulseLoadRecord.read(json.loads(stored(doc)))
    assert stored(record.doc()) == stored(doc)
    assert list(record.presented().items()) == list(answered.items())
    assert record.running is (doc["finishedState"] is None)


def test_a_record_built_by_a_load_is_stored_with_the_keys_of_every_earlier_version() -> None:
    record = PulseLoadRecord(
        creatorName="Console API",
        createdTime=STARTED["createdTime"],
        finishedTime=None,
        finishedState=None,
        startDs="2026-03-01",
        endDs="2026-03-10",
        reloadType="full",
        turboMode=False,
    )
    assert stored(record.doc()) == stored(STARTED)
    done = record.finished("success", SUCCEEDED["finishedTime"], end_ds="2026-03-09")
    assert stored(done.doc()) == stored(SUCCEEDED)
    failed = record.finished("failure", FAILED["finishedTime"], message=FAILED["message"])
    assert stored(failed.doc()) == stored(FAILED)
    progress = record.with_progress("results 2026-03-02", 9, 20)
    assert progress.doc() == {**STARTED, "progress": {"step": "results 2026-03-02", "done": 9, "total": 20}}
    assert stored(record.doc()) == stored(STARTED)  # each step is a new record


def test_a_queued_record_read_back_shows_progress_after_its_own_keys() -> None:
    queued = PulseLoadRecord.read({"note": "x", **STARTED})
    assert list(queued.with_progress("done", 1, 1).doc()) == ["note", *STARTED, "progress"]


# --- the health document ------------------------------------------------------------------------------

CHECKS_FIRST_VERSION: list[dict[str, Any]] = [
    {
        "name": "Pulse loaded",
        "description": "120 units exposed up to 2026-03-09.",
        "status": "PASSED",
        "type": "has_checks",
        "metadata": {
            "type": "has_checks",
            "primary_id_type": "userID",
            "lastPulseLoadTime": 1_773_100_000_000,
            "lastUpdatedDs": "2026-03-09",
        },
    },
    {
        "name": "Sample ratio",
        "description": "Chi-squared test of the units per group against the configured sizes.",
        "status": "PASSED",
        "type": "srm",
        "metadata": {
            "type": "srm",
            "p_value": 0.41,
            "groups": [
                {
                    "groupID": "control",
                    "groupName": "Control",
                    "units": 58,
                    "expectedPercent": 50.0,
                    "observedPercent": 48.333333333333336,
                },
                {
                    "groupID": "test",
                    "groupName": "Test",
                    "units": 62,
                    "expectedPercent": 50.0,
                    "observedPercent": 51.666666666666664,
                },
            ],
        },
    },
    {
        "name": "Exposure balance",
        "description": "Every enabled group gets units; few cross groups or have bad exposures.",
        "status": "PASSED",
        "type": "exposure_balance",
        "metadata": {
            "type": "exposure_balance",
            "crossoverPercent": 0.0,
            "unknownGroupExposures": 0,
            "disabledGroupExposures": 0,
            "exposuresAfterDecision": 0,
            "validExposures": 240,
        },
    },
    {
        "name": "Metrics",
        "description": "Metrics with data, and the first and last day each had any.",
        "status": "WARNING",
        "type": "metrics",
        "metadata": {
            "type": "metrics",
            "missingMetrics": ["refund::event_count"],
            "metrics": [
                {
                    "metric_name": "purchase::event_count",
                    "earliest_date": "2026-03-01",
                    "latest_date": "2026-03-09",
                },
                {"metric_name": "refund::event_count", "earliest_date": None, "latest_date": None},
            ],
        },
    },
]
# The first version's document: no `neverLoggedMetrics` (services.event_names came later).
HEALTH_FIRST_VERSION: dict[str, Any] = {"status": "WARNING", "checks": CHECKS_FIRST_VERSION}
# Since never-logged metrics: the metrics check FAILED, naming them.
HEALTH_NEVER_LOGGED: dict[str, Any] = {
    "status": "FAILED",
    "checks": [
        *CHECKS_FIRST_VERSION[:3],
        {
            "name": "Metrics",
            "description": "Metrics with data, and the first and last day each had any. FAILED: "
            "purchse::event_count count events never logged.",
            "status": "FAILED",
            "type": "metrics",
            "metadata": {
                "type": "metrics",
                "missingMetrics": ["refund::event_count", "purchse::event_count"],
                "metrics": CHECKS_FIRST_VERSION[3]["metadata"]["metrics"],
                "neverLoggedMetrics": ["purchse::event_count"],
            },
        },
    ],
}
# Keys and a check this version does not write (a later version's, or another module's): kept.
HEALTH_WITH_UNKNOWN_KEYS: dict[str, Any] = {
    "status": "WARNING",
    "checks": [
        {**CHECKS_FIRST_VERSION[0], "severity": 1},
        {
            **CHECKS_FIRST_VERSION[1],
            "metadata": {**CHECKS_FIRST_VERSION[1]["metadata"], "chiSquared": 0.68},
        },
        CHECKS_FIRST_VERSION[2],
        CHECKS_FIRST_VERSION[3],
        {
            "name": "Novelty",
            "description": "Later days against earlier ones.",
            "status": "PASSED",
            "type": "novelty",
            "metadata": {"type": "novelty", "days": [1, 2]},
        },
    ],
    "computedBy": "pulse v3",
}


@pytest.mark.parametrize("doc", [HEALTH_FIRST_VERSION, HEALTH_NEVER_LOGGED, HEALTH_WITH_UNKNOWN_KEYS])
def test_every_stored_health_document_reads_and_writes_back_as_stored(doc: dict[str, Any]) -> None:
    health = PulseHealth.read(json.loads(json.dumps(doc)))
    assert health is not None
    assert json.dumps(health.doc()) == json.dumps(doc)
    meta = health.metrics_check()
    assert isinstance(meta, MetricsMetadata)
    assert [m.metric_name for m in meta.metrics] == ["purchase::event_count", "refund::event_count"]


def test_a_check_of_an_unknown_type_keeps_its_metadata_as_it_is() -> None:
    health = PulseHealth.read(HEALTH_WITH_UNKNOWN_KEYS)
    assert health is not None
    novelty = health.checks[-1]
    assert isinstance(novelty.metadata, OtherMetadata)
    assert novelty.metadata.model_dump() == {"type": "novelty", "days": [1, 2]}


@pytest.mark.parametrize("doc", [None, {}])
def test_no_stored_health_document_reads_as_none(doc: dict[str, Any] | None) -> None:
    assert PulseHealth.read(doc) is None


def test_never_logged_metrics_fail_the_metrics_check_in_a_new_document() -> None:
    health = PulseHealth.model_validate(HEALTH_FIRST_VERSION)
    amended = health.with_never_logged(["purchse::event_count"])
    assert json.dumps(amended.doc()) == json.dumps(HEALTH_NEVER_LOGGED)
    assert json.dumps(health.doc()) == json.dumps(HEALTH_FIRST_VERSION)  # unchanged
    assert health.with_never_logged([]) is health


def test_a_metric_already_missing_is_listed_once_when_also_never_logged() -> None:
    health = PulseHealth.model_validate(HEALTH_FIRST_VERSION)
    meta = health.with_never_logged(["refund::event_count"]).metrics_check()
    assert meta is not None
    assert (meta.missingMetrics, meta.neverLoggedMetrics) == (
        ["refund::event_count"],
        ["refund::event_count"],
    )


# --- the health document a load writes, and what a `metric` refresh keeps of the stored one -----------

PURCHASE, REFUND, VISITS = "purchase::event_count", "refund::event_count", "visit::event_dau"


def plan(*metric_ids: str) -> EntityPlan:
    return EntityPlan(
        kind="EXPERIMENT",
        id="exp",
        name="exp",
        id_type="userID",
        start_ms=0,
        end_ms=None,
        decision_ms=None,
        exposure_event="exposure",
        groups=[
            {"id": "control", "name": "Control", "size": 50},
            {"id": "test", "name": "Test", "size": 50},
            {"id": "off", "name": "Off", "size": 0, "disabled": True},
        ],
        control_id="control",
        rollup=-1,
        metrics=[MetricPlan(m, m.split("::")[0], m.split("::")[1], "increase", "mean") for m in metric_ids],
        atoms=[],
        funnels=[],
    )


def summary(**changes: Any) -> AnalysisHealth:
    base = AnalysisHealth(
        ds="2026-03-09",
        units={"control": 58, "test": 62},
        exposed_units=120,
        crossover_units=0,
        srm_status="pass",
        srm_p_value=0.41,
        exposures={"valid": 240, "unknownGroup": 0, "disabledGroup": 0, "afterDecision": 0},
        missing_metrics=[REFUND],
        metric_dates={PURCHASE: ("2026-03-01", "2026-03-09"), REFUND: (None, None)},
        groups=[HealthGroup("control", "Control", 50), HealthGroup("test", "Test", 50)],
    )
    return AnalysisHealth(**{**base.__dict__, **changes})


def test_a_load_writes_the_health_document_in_the_shape_every_version_answered() -> None:
    doc = run.health_doc(plan(PURCHASE, REFUND), summary(), now=1_773_100_000_000).doc()
    assert json.dumps(doc) == json.dumps(HEALTH_FIRST_VERSION)


def test_exposures_read_past_the_decision_are_counted_in_a_new_summary() -> None:
    before = summary()
    after = before.with_exposures([{"afterDecision": 3, "valid": 0}, {"afterDecision": 2, "unknownGroup": 1}])
    assert after.exposures == {"valid": 240, "unknownGroup": 1, "disabledGroup": 0, "afterDecision": 5}
    assert before.exposures["afterDecision"] == 0


@pytest.mark.parametrize("previous", [HEALTH_FIRST_VERSION, HEALTH_NEVER_LOGGED, HEALTH_WITH_UNKNOWN_KEYS])
def test_a_metric_refresh_keeps_what_the_stored_document_said_of_the_other_metrics(
    previous: dict[str, Any],
) -> None:
    """Only VISITS was computed: PURCHASE keeps its stored dates, REFUND stays missing (it was)."""
    computed = summary(missing_metrics=[], metric_dates={VISITS: ("2026-03-02", "2026-03-09")})
    health = run.health_doc(plan(PURCHASE, REFUND, VISITS), computed, 5, PulseHealth.read(previous))
    meta = health.metrics_check()
    assert meta is not None
    assert [(m.metric_name, m.earliest_date, m.latest_date) for m in meta.metrics] == [
        (PURCHASE, "2026-03-01", "2026-03-09"),
        (REFUND, None, None),
        (VISITS, "2026-03-02", "2026-03-09"),
    ]
    # Metrics no longer in the plan (the stored never-logged typo) are not carried over.
    assert meta.missingMetrics == [REFUND]


def test_a_metric_refresh_without_a_stored_document_lists_the_others_missing() -> None:
    computed = summary(missing_metrics=[], metric_dates={VISITS: ("2026-03-02", "2026-03-09")})
    meta = run.health_doc(plan(PURCHASE, VISITS), computed, 5, None).metrics_check()
    assert meta is not None
    assert (meta.missingMetrics, [m.metric_name for m in meta.metrics]) == ([PURCHASE], [VISITS])
