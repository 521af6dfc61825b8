"""The quality score: each default check at its edge, and the merge with manual scores —
renormalisation worked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from expconsole.services.quality import DEFAULT_CRITERIA, check_statuses, quality_score


def group(size: float, disabled: bool = False) -> dict[str, Any]:
    return {"size": size, "disabled": disabled}


def metric(**extra: Any) -> dict[str, Any]:
    return {"name": "m", "type": "sum", **extra}


# Every default check passes for this experiment.
GOOD: dict[str, Any] = {
    "hypothesis": "x" * 20,
    "groups": [group(50), group(50)],
    "allocation": 100,
    "primaryMetrics": [metric(hypothesizedValue=0.1)],
    "secondaryMetrics": [],
    "secondaryMetricTags": ["guardrails"],
    "duration": 7,
    "targetExposures": 1000,
    "sequentialTesting": True,
    "analyticsType": "frequentist",
}


def statuses(**changes: Any) -> dict[str, str]:
    return check_statuses({**GOOD, **changes})


def test_the_good_experiment_passes_everything() -> None:
    assert statuses() == dict.fromkeys(DEFAULT_CRITERIA, "PASSED")
    assert quality_score(GOOD)["score"] == 100


@pytest.mark.parametrize(
    ("changes", "criterion", "status"),
    [
        ({"hypothesis": "x" * 19}, "HYPOTHESIS_LENGTH", "FAILED"),
        ({"hypothesis": "  " + "x" * 19 + "  "}, "HYPOTHESIS_LENGTH", "FAILED"),
        ({"hypothesis": "x" * 20}, "HYPOTHESIS_LENGTH", "PASSED"),
        ({"groups": [group(50.5), group(49.5)]}, "BALANCED_EXPOSURE", "PASSED"),
        ({"groups": [group(50.6), group(49.4)]}, "BALANCED_EXPOSURE", "FAILED"),
        ({"groups": [group(20), group(40), group(40, disabled=True)]}, "BALANCED_EXPOSURE", "FAILED"),
        ({"groups": [group(40), group(40), group(20, disabled=True)]}, "BALANCED_EXPOSURE", "PASSED"),
        ({"groups": [group(100), group(0, disabled=True)]}, "BALANCED_EXPOSURE", "FAILED"),
        ({"primaryMetrics": []}, "PRIMARY_METRICS_LENGTH", "FAILED"),
        ({"primaryMetrics": [metric()] * 3}, "PRIMARY_METRICS_LENGTH", "PASSED"),
        ({"primaryMetrics": [metric()] * 4}, "PRIMARY_METRICS_LENGTH", "WARNING"),
        ({"secondaryMetrics": [metric()]}, "COMPARISON_CORRECTION", "FAILED"),
        ({"secondaryMetrics": [metric()], "bonferroniCorrection": True}, "COMPARISON_CORRECTION", "PASSED"),
        (
            {"secondaryMetrics": [metric()], "bonferroniCorrectionPerMetric": True},
            "COMPARISON_CORRECTION",
            "PASSED",
        ),
        (
            {"secondaryMetrics": [metric()], "benjaminiHochbergPerVariant": True},
            "COMPARISON_CORRECTION",
            "PASSED",
        ),
        (
            {"secondaryMetrics": [metric()], "benjaminiHochbergPerMetric": True},
            "COMPARISON_CORRECTION",
            "PASSED",
        ),
        ({"groups": [group(34), group(33), group(33)]}, "COMPARISON_CORRECTION", "FAILED"),
        ({"groups": [group(50), group(50), group(0, disabled=True)]}, "COMPARISON_CORRECTION", "PASSED"),
        ({"secondaryMetricTags": []}, "GUARDRAIL_METRIC_TAGS", "FAILED"),
        ({"duration": 6}, "SUFFICIENT_SAMPLE", "FAILED"),
        ({"allocation": 0}, "SUFFICIENT_SAMPLE", "FAILED"),
        ({"groups": [group(100), group(0)]}, "SUFFICIENT_SAMPLE", "FAILED"),
        (
            {"groups": [group(100), group(0, disabled=True), group(0, disabled=True)]},
            "SUFFICIENT_SAMPLE",
            "PASSED",
        ),
        ({"targetExposures": None}, "POWER_ANALYSIS", "FAILED"),
        ({"primaryMetrics": [metric(hypothesizedValue=1), metric()]}, "POWER_ANALYSIS", "FAILED"),
        ({"primaryMetrics": []}, "POWER_ANALYSIS", "FAILED"),
        ({"primaryMetrics": [metric(hypothesizedValue=0)]}, "POWER_ANALYSIS", "PASSED"),
        ({"sequentialTesting": False}, "SEQUENTIAL_TESTING", "FAILED"),
        ({"sequentialTesting": False, "analyticsType": "sprt"}, "SEQUENTIAL_TESTING", "PASSED"),
        ({"sequentialTesting": False, "analyticsType": "bayesian"}, "SEQUENTIAL_TESTING", "FAILED"),
    ],
)
def test_each_check_at_its_edge(changes: dict[str, Any], criterion: str, status: str) -> None:
    assert statuses(**changes)[criterion] == status


def manual(
    name: str, weight: float, score: float = 0, status: str = "PASSED", text: str = ""
) -> dict[str, Any]:
    return {
        "criteriaName": name,
        "status": status,
        "criteriaDescription": text,
        "score": score,
        "weight": weight,
    }


def rows(result: dict[str, Any]) -> list[tuple[str, str, Any, Any]]:
    return [(c["criterion"], c["status"], c["score"], c["weight"]) for c in result["breakdown"]]


def test_defaults_alone_weigh_12_5_each() -> None:
    # GOOD minus sequential testing and guardrail tags: 6 of 8 pass -> 6 * 12.5 = 75.
    result = quality_score({**GOOD, "sequentialTesting": False, "secondaryMetricTags": []})
    assert result["score"] == 75
    assert [w for *_, w in rows(result)] == [12.5] * 8


def test_manual_entries_add_and_renormalise() -> None:
    doc = {
        **GOOD,
        "sequentialTesting": False,  # SEQUENTIAL_TESTING fails
        "manualQualityScores": [
            manual("POWER_ANALYSIS", 0),  # removed
            manual("SEQUENTIAL_TESTING", 37.5, score=100, status="PASSED"),  # only the weight changes
            manual("LINKED_DOC", 25, score=80, status="WARNING", text="has a planning doc"),
        ],
    }
    # Weights: six defaults at 12.5 (75) + 37.5 + 25 = 137.5 -> factor 100/137.5:
    #   defaults 12.5 * 100/137.5 = 9.0909..., SEQUENTIAL 37.5 -> 27.2727..., LINKED_DOC 25 -> 18.1818...
    # Score: six passing defaults 6 * 9.0909 * 100 + 27.2727 * 0 + 18.1818 * 80 = 5454.545 + 1454.545
    #   = 6909.09 / 100 = 69.09.
    result = quality_score(doc)
    assert rows(result) == [
        ("HYPOTHESIS_LENGTH", "PASSED", 100, 9.09),
        ("BALANCED_EXPOSURE", "PASSED", 100, 9.09),
        ("PRIMARY_METRICS_LENGTH", "PASSED", 100, 9.09),
        ("COMPARISON_CORRECTION", "PASSED", 100, 9.09),
        ("GUARDRAIL_METRIC_TAGS", "PASSED", 100, 9.09),
        ("SUFFICIENT_SAMPLE", "PASSED", 100, 9.09),
        ("SEQUENTIAL_TESTING", "FAILED", 0, 27.27),
        ("LINKED_DOC", "WARNING", 80, 18.18),
    ]
    assert result["score"] == 69.09
    linked = result["breakdown"][-1]
    assert linked["passingDescription"] == "has a planning doc"
    assert result["breakdown"][6]["passingDescription"] != ""


def test_three_defaults_left_share_100_in_thirds() -> None:
    removed = [manual(name, 0) for name in DEFAULT_CRITERIA[3:]]
    result = quality_score({**GOOD, "hypothesis": "", "manualQualityScores": removed})
    # HYPOTHESIS_LENGTH fails, BALANCED_EXPOSURE and PRIMARY_METRICS_LENGTH pass: 2/3 of 100.
    assert rows(result) == [
        ("HYPOTHESIS_LENGTH", "FAILED", 0, 33.33),
        ("BALANCED_EXPOSURE", "PASSED", 100, 33.33),
        ("PRIMARY_METRICS_LENGTH", "PASSED", 100, 33.33),
    ]
    assert result["score"] == 66.67


def test_a_custom_entry_alone_and_everything_removed() -> None:
    everything = [manual(name, 0) for name in DEFAULT_CRITERIA]
    alone = quality_score({**GOOD, "manualQualityScores": [*everything, manual("MINE", 7, score=35)]})
    assert alone == {
        "score": 35,
        "breakdown": [
            {"criterion": "MINE", "status": "PASSED", "passingDescription": "", "score": 35, "weight": 100}
        ],
    }
    assert isinstance(alone["score"], int) and isinstance(alone["breakdown"][0]["weight"], int)
    assert quality_score({**GOOD, "manualQualityScores": everything}) == {"score": 0, "breakdown": []}


def test_a_custom_entry_of_weight_0_is_not_added() -> None:
    result = quality_score({**GOOD, "manualQualityScores": [manual("NOTHING", 0, score=100)]})
    assert [c["criterion"] for c in result["breakdown"]] == list(DEFAULT_CRITERIA)
    assert result["score"] == 100


def test_raising_a_default_weight_shifts_the_score() -> None:
    # Only HYPOTHESIS_LENGTH fails; weighting it 12.5 * 9 = 112.5 makes the total 200:
    # it weighs 56.25 and the seven passing checks 6.25 each: score 7 * 6.25 = 43.75.
    result = quality_score(
        {**GOOD, "hypothesis": "short", "manualQualityScores": [manual("HYPOTHESIS_LENGTH", 112.5)]}
    )
    assert rows(result)[0] == ("HYPOTHESIS_LENGTH", "FAILED", 0, 56.25)
    assert all(w == 6.25 for *_, w in rows(result)[1:])
    assert result["score"] == 43.75
