"""An experiment's quality score: eight default checks on its own fields, merged with its
`manualQualityScores` as the contract says.

Each criterion has a `status`, a `score` (the percent of the criterion earned: `PASSED` 100,
`WARNING` 50, `FAILED` 0 for the defaults; manual entries bring their own 0 to 100) and a
`weight`. The eight defaults weigh 12.5 each. Merging:

- a manual entry naming a default criterion changes only that criterion's weight (its status,
  description and score stay the check's own); a weight of 0 removes the criterion;
- any other manual entry is added as a criterion of its own (weight 0: not added);
- the weights left are renormalised to sum to 100: `w' = w * 100 / sum(w)`;
- the overall `score` is `sum(w' * score) / 100`, from 0 to 100.

Shown values are rounded to two decimals (integers stay integers); the overall score is
computed from the unrounded weights. With every criterion removed the score is 0 and the
breakdown empty.

The default checks, from the experiment's own fields (PASSED or FAILED unless said):

- HYPOTHESIS_LENGTH: the hypothesis has at least 20 characters (ends trimmed).
- BALANCED_EXPOSURE: at least 2 groups are enabled and their sizes differ by at most 1
  percentage point.
- PRIMARY_METRICS_LENGTH: 1 to 3 primary metrics; none FAILED; more than 3 is a WARNING (more
  chances of a false positive).
- COMPARISON_CORRECTION: a Bonferroni or Benjamini-Hochberg correction is on, or there is a
  single comparison: (enabled groups - 1) x (primary + secondary metrics) <= 1.
- GUARDRAIL_METRIC_TAGS: at least one secondary (guardrail) metric tag is set.
- SUFFICIENT_SAMPLE: the planned duration is at least 7 days (a weekly cycle) and every enabled
  group gets traffic (allocation and each enabled group's size above 0).
- POWER_ANALYSIS: `targetExposures` is set and every primary metric (at least one) states its
  `hypothesizedValue` (the effect the sample was sized for).
- SEQUENTIAL_TESTING: sequential testing is on, or the analysis is SPRT (sequential by design).
"""

from __future__ import annotations

import math
from typing import Any

Doc = dict[str, Any]

DEFAULT_CRITERIA = (
    "HYPOTHESIS_LENGTH",
    "BALANCED_EXPOSURE",
    "PRIMARY_METRICS_LENGTH",
    "COMPARISON_CORRECTION",
    "GUARDRAIL_METRIC_TAGS",
    "SUFFICIENT_SAMPLE",
    "POWER_ANALYSIS",
    "SEQUENTIAL_TESTING",
)
DEFAULT_WEIGHT = 100 / len(DEFAULT_CRITERIA)  # 12.5
STATUS_SCORE = {"PASSED": 100, "WARNING": 50, "FAILED": 0}

MIN_HYPOTHESIS_CHARS = 20
MAX_SIZE_SPREAD = 1
MAX_PRIMARY_METRICS = 3
MIN_DURATION_DAYS = 7

DESCRIPTIONS = {
    "HYPOTHESIS_LENGTH": f"The hypothesis has at least {MIN_HYPOTHESIS_CHARS} characters.",
    "BALANCED_EXPOSURE": f"Enabled groups have sizes within {MAX_SIZE_SPREAD} percentage point of "
    "each other.",
    "PRIMARY_METRICS_LENGTH": f"The experiment has 1 to {MAX_PRIMARY_METRICS} primary metrics.",
    "COMPARISON_CORRECTION": "A multiple-comparison correction (Bonferroni or Benjamini-Hochberg) is "
    "applied, or there is a single comparison.",
    "GUARDRAIL_METRIC_TAGS": "At least one guardrail (secondary) metric tag is set.",
    "SUFFICIENT_SAMPLE": f"The planned duration covers at least {MIN_DURATION_DAYS} days and every "
    "enabled group receives traffic.",
    "POWER_ANALYSIS": "Target exposures are set and every primary metric states its hypothesized effect.",
    "SEQUENTIAL_TESTING": "Sequential testing (or SPRT) guards against peeking at results early.",
}


def _enabled_groups(doc: Doc) -> list[Doc]:
    return [g for g in doc.get("groups") or [] if not g.get("disabled")]


def _passed(condition: bool) -> str:
    return "PASSED" if condition else "FAILED"


def check_statuses(doc: Doc) -> dict[str, str]:
    """The status of each default check for this experiment."""
    groups = _enabled_groups(doc)
    sizes = [g["size"] for g in groups]
    primary = doc.get("primaryMetrics") or []
    secondary = doc.get("secondaryMetrics") or []
    comparisons = max(len(groups) - 1, 0) * (len(primary) + len(secondary))
    corrected = any(
        doc.get(flag)
        for flag in (
            "bonferroniCorrection",
            "bonferroniCorrectionPerMetric",
            "benjaminiHochbergPerVariant",
            "benjaminiHochbergPerMetric",
        )
    )
    if not primary:
        primary_status = "FAILED"
    elif len(primary) > MAX_PRIMARY_METRICS:
        primary_status = "WARNING"
    else:
        primary_status = "PASSED"
    return {
        "HYPOTHESIS_LENGTH": _passed(len((doc.get("hypothesis") or "").strip()) >= MIN_HYPOTHESIS_CHARS),
        "BALANCED_EXPOSURE": _passed(len(sizes) >= 2 and max(sizes) - min(sizes) <= MAX_SIZE_SPREAD),
        "PRIMARY_METRICS_LENGTH": primary_status,
        "COMPARISON_CORRECTION": _passed(corrected or comparisons <= 1),
        "GUARDRAIL_METRIC_TAGS": _passed(bool(doc.get("secondaryMetricTags"))),
        "SUFFICIENT_SAMPLE": _passed(
            (doc.get("duration") or 0) >= MIN_DURATION_DAYS
            and (doc.get("allocation") or 0) > 0
            and bool(sizes)
            and all(size > 0 for size in sizes)
        ),
        "POWER_ANALYSIS": _passed(
            doc.get("targetExposures") is not None
            and bool(primary)
            and all(m.get("hypothesizedValue") is not None for m in primary)
        ),
        "SEQUENTIAL_TESTING": _passed(
            bool(doc.get("sequentialTesting")) or doc.get("analyticsType") == "sprt"
        ),
    }


def _shown(value: float) -> int | float:
    """Two decimals; a whole number as an integer."""
    rounded = round(value, 2)
    return int(rounded) if rounded == int(rounded) else rounded


def quality_score(doc: Doc) -> Doc:
    """`{score, breakdown: [{criterion, status, passingDescription, score, weight}]}`."""
    criteria: dict[str, Doc] = {
        name: {
            "criterion": name,
            "status": status,
            "passingDescription": DESCRIPTIONS[name],
            "score": STATUS_SCORE[status],
            "weight": DEFAULT_WEIGHT,
        }
        for name, status in check_statuses(doc).items()
    }
    for entry in doc.get("manualQualityScores") or []:
        name = entry["criteriaName"]
        if name in DEFAULT_CRITERIA:
            criteria[name]["weight"] = entry["weight"]
        else:
            criteria[name] = {
                "criterion": name,
                "status": entry["status"],
                "passingDescription": entry["criteriaDescription"],
                "score": entry["score"],
                "weight": entry["weight"],
            }
    kept = [c for c in criteria.values() if c["weight"] > 0]
    if not kept:
        return {"score": 0, "breakdown": []}
    # Scaled by the largest first: weights near the float maximum would overflow a plain sum.
    top = max(c["weight"] for c in kept)
    shares = [c["weight"] / top for c in kept]
    total = math.fsum(shares)
    weights = [share * 100 / total for share in shares]
    score = math.fsum(w * c["score"] for w, c in zip(weights, kept, strict=True)) / 100
    breakdown = [
        {**c, "score": _shown(c["score"]), "weight": _shown(w)} for w, c in zip(weights, kept, strict=True)
    ]
    return {"score": _shown(score), "breakdown": breakdown}
