# ruff: noqa: RUF001, RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""Pulse results: the stored group statistics record, the query parameters and the response shapes.

`GroupStatistics` is the meeting point of the pulse pipeline (which writes it) and the results
function (which reads it); `expconsole.store.group_stats` documents how it is keyed and why it
is cumulative. This module is plain pydantic: no numpy, no scipy (CRUD functions may import
models).
"""

import datetime as dt
import math
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from expconsole.models.base import QueryBool, ResponseModel

EntityKind = Literal["EXPERIMENT", "HOLDOUT"]
StatisticKind = Literal["mean", "ratio"]

# Holdout comparisons use these group ids: held-out units are the control (docs/statistics.md,
# 'Holdouts: topline impact and reverse power').
HOLDOUT_CONTROL_GROUP = "control"
HOLDOUT_TEST_GROUP = "test"


def _iso_day(value: str) -> str:
    try:
        parsed = dt.date.fromisoformat(value)
    except ValueError:
        raise ValueError("must be a calendar date as YYYY-MM-DD") from None
    if len(value) != 10 or parsed.isoformat() != value:
        raise ValueError("must be a calendar date as YYYY-MM-DD")
    return value


Day = Annotated[
    str,
    Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="A UTC day as YYYY-MM-DD."),
    AfterValidator(_iso_day),
]

# Column layouts of `means`/`comoments` by statistic kind: mean [x] or [x, p] (CUPED covariate p);
# ratio [m, d] or [m, d, pre m, pre d]. The second form of each carries `preNonzero`.
WIDTHS: dict[str, tuple[int, int]] = {"mean": (1, 2), "ratio": (2, 4)}


class GroupStatistics(BaseModel):
    """Cumulative sufficient statistics of one metric for one group, from the start up to `ds`.

    The engine's stable form (`expconsole.stats.moments`): `n`, column `means` and centred
    co-moments `C_ij = Σ(a_i − ā_i)(a_j − ā_j)` (a k×k matrix), never raw power sums.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, defer_build=True)

    entityKind: EntityKind
    entityID: str = Field(min_length=1)
    ds: Day
    metricID: str = Field(min_length=1, description="`<name>::<type>`.")
    groupID: str = Field(min_length=1)
    metricName: str
    metricType: str
    directionality: Literal["increase", "decrease"] = "increase"
    kind: StatisticKind = "mean"
    n: int = Field(ge=0)
    means: list[float]
    comoments: list[list[float]]
    preNonzero: int | None = Field(None, ge=0, description="Units with pre-exposure data (CUPED form only).")

    @model_validator(mode="after")
    def _shape(self) -> Self:
        k = len(self.means)
        if k not in WIDTHS[self.kind]:
            raise ValueError(
                f"a {self.kind} statistic has {' or '.join(map(str, WIDTHS[self.kind]))} columns"
            )
        if len(self.comoments) != k or any(len(row) != k for row in self.comoments):
            raise ValueError(f"comoments must be a {k}×{k} matrix")
        if any(self.comoments[i][i] < 0 for i in range(k)):
            raise ValueError("the diagonal of comoments (sums of squared deviations) cannot be negative")
        cuped = k == WIDTHS[self.kind][1]
        if cuped and self.preNonzero is None:
            raise ValueError("preNonzero is required with pre-exposure columns")
        if not cuped and self.preNonzero is not None:
            raise ValueError("preNonzero goes only with pre-exposure columns")
        if self.preNonzero is not None and self.preNonzero > self.n:
            raise ValueError("preNonzero cannot exceed n")
        if not all(math.isfinite(v) for row in self.comoments for v in row):
            raise ValueError("comoments must be finite")
        return self

    @property
    def has_pre(self) -> bool:
        return len(self.means) == WIDTHS[self.kind][1]


class ResultDay(BaseModel):
    """The day index item: this day's statistics are complete; units per group (for SRM checks)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    ds: Day
    records: int = Field(ge=0)
    units: dict[str, int] = Field(default_factory=dict)
    writtenAt: int = Field(ge=0, description="Milliseconds since the epoch.")


# --- requests -----------------------------------------------------------------------------------------


def _percentage(value: float) -> float:
    if value <= 1:
        raise ValueError(
            f"is a percentage: send 99 for 99 % confidence, not 0.99 (got {value:g}; it must be over 1 "
            "and under 100)"
        )
    return value


Confidence = Annotated[
    float,
    Field(
        gt=0,
        lt=100,
        allow_inf_nan=False,
        description="A percentage over 1 and under 100 (`95`, not `0.95`).",
    ),
    AfterValidator(_percentage),
]


class ExperimentResultsOptions(BaseModel):
    """The options of an experiment's results; unset options take the experiment's settings."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    control: str | None = Field(
        None,
        min_length=1,
        description="Control group id; default the experiment's controlGroupID, else its first group.",
    )
    test: str | None = Field(
        None,
        min_length=1,
        description="Test group id; default the one group other than control, when there is exactly one.",
    )
    cuped: QueryBool | None = Field(None, description="`true` or `false`; default true.")
    confidence: Confidence | None = Field(
        None, description="Default: the experiment's defaultConfidenceInterval."
    )
    applyBonferroniPerVariant: QueryBool | None = None
    applyBonferroniPerMetric: QueryBool | None = None
    bonferroniPrimaryMetricWeight: float | None = Field(
        None, ge=0, le=1, allow_inf_nan=False, description="Share of α for primary metrics, 0 to 1."
    )
    applyBenjaminiHochbergPerMetric: QueryBool | None = None
    applyBenjaminiHochbergPerVariant: QueryBool | None = None
    benjaminiPrimaryMetricsOnly: QueryBool | None = None


class ExperimentResultsSeriesQuery(ExperimentResultsOptions):
    """Query of GET /experiments/{id}/pulse_results/days: every computed day with these options."""


class ExperimentResultsQuery(ExperimentResultsOptions):
    """Query of GET /experiments/{id}/pulse_results; unset options take the experiment's settings."""

    date: Day | None = Field(None, description="Result day; default the latest computed day.")


class HoldoutResultsQuery(BaseModel):
    """Query of GET /holdouts/{id}/pulse_results."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    cuped: QueryBool | None = Field(None, description="`true` or `false`; default true.")
    confidence: Confidence | None = Field(None, description="Default 95.")


# --- responses ----------------------------------------------------------------------------------------


class Interval(ResponseModel):
    lower: float | None
    upper: float | None


class ExperimentResultEntry(ResponseModel):
    metricID: str
    metricName: str
    directionality: str
    value: float | None
    confidence_interval_delta: float | None
    confidence_interval: Interval
    percent_change: float | None
    percent_confidence_interval_delta: float | None
    percent_confidence_interval: Interval
    percent_sequential_testing_confidence_interval_delta: float | None
    percent_sequential_testing_confidence_interval: Interval
    test_mean: float | None
    control_mean: float | None
    test_std: float | None
    control_std: float | None
    test_units: int
    control_units: int
    p_value: float | None
    sequentialTestingPValue: float | None
    adjustedAlpha: float
    reason: str | None = Field(
        None,
        description=(
            "Why some figures are null (zero control mean, no units in a group, zero denominator, ...); "
            "null when every figure is defined."
        ),
    )


class ExperimentResults(ResponseModel):
    ds: str = Field(
        description="The result day (YYYY-MM-DD); with none computed, the `date` asked for, else today (UTC)."
    )
    primaryMetrics: list[ExperimentResultEntry]
    secondaryMetrics: list[ExperimentResultEntry]
    otherMetrics: list[ExperimentResultEntry]


class ExperimentResultsEnvelope(ResponseModel):
    message: str
    data: ExperimentResults


class ResultSeriesPoint(ResponseModel):
    """One result day of one metric: the cumulative effect up to the end of that day."""

    ds: str
    value: float | None
    confidence_interval: Interval
    percent_change: float | None
    percent_confidence_interval: Interval
    percent_sequential_testing_confidence_interval: Interval
    p_value: float | None
    test_units: int
    control_units: int


class ResultSeriesMetric(ResponseModel):
    metricID: str
    metricName: str
    directionality: str
    category: Literal["primary", "secondary", "other"]
    points: list[ResultSeriesPoint] = Field(
        description="Oldest day first; a day without the metric is absent."
    )


class ExperimentResultSeries(ResponseModel):
    days: list[str] = Field(description="Every computed result day, oldest first.")
    metrics: list[ResultSeriesMetric]


class ExperimentResultSeriesEnvelope(ResponseModel):
    message: str
    data: ExperimentResultSeries


class HoldoutResultEntry(ResponseModel):
    metricID: str
    metricName: str
    directionality: str
    absoluteChange: float | None
    pValue: float | None
    reversePower: float | None
    absoluteToplineImpact: float | None
    reason: str | None = Field(
        None,
        description=(
            "Why some figures are null (zero control mean, no units in a group, zero denominator, ...); "
            "null when every figure is defined."
        ),
    )


class HoldoutResults(ResponseModel):
    ds: str = Field(description="The result day (YYYY-MM-DD); today (UTC) while there is none yet.")
    monitoringMetrics: list[HoldoutResultEntry]


class HoldoutResultsEnvelope(ResponseModel):
    message: str
    data: HoldoutResults
