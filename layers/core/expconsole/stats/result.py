# ruff: noqa: RUF001, RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""One pulse result entry from two group statistics, and a whole scorecard with its corrections.

Field meanings (docs/statistics.md, 'Result fields'): with CUPED applied, `value` and every interval
are adjusted, `test_std`/`control_std` are adjusted standard errors of the means,
`test_mean`/`control_mean` stay raw, and the percent change divides the adjusted delta by the raw
control mean. `p_value` is never corrected; intervals use `adjustedAlpha`. Sequential fields are the
mSPRT ones before the planned end and the fixed-horizon ones otherwise. Undefined figures are None
(JSON null) and `reason` says why; nothing is ever NaN or infinite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._numeric import finite_or_none
from .bayesian import BayesianPrior, BayesianResult, bayesian_test
from .corrections import Category, CorrectionEntry, CorrectionFlags, adjusted_alphas
from .cuped import CupedResult, cuped_adjust
from .frequentist import FrequentistResult, PercentMethod, frequentist_test
from .holdout import ToplineImpact, reverse_power, topline_impact
from .moments import (
    CupedRatioStatistic,
    CupedStatistic,
    GroupSummary,
    RatioStatistic,
    SampleMeanStatistic,
    Statistic,
)
from .sequential import SequentialResult, is_sequential_period, sequential_test
from .sprt import SprtResult, SprtSettings, sprt_test

__all__ = [
    "ExperimentResult",
    "HoldoutResult",
    "ResultOptions",
    "ScorecardRow",
    "compute_scorecard",
    "experiment_result",
    "holdout_result",
]


@dataclass(frozen=True, slots=True)
class ResultOptions:
    """How to compute an entry: the request's settings and the experiment's."""

    confidence: float = 95.0
    """Confidence level in percent, as the API's `confidence` parameter (0 < c < 100)."""
    adjusted_alpha: float | None = None
    """α after corrections (see `corrections`); default 1 − confidence/100."""
    cuped: bool = True
    sequential: bool = False
    elapsed_fraction: float | None = None
    """Elapsed share of the planned duration; ≥ 1 means the planned end has passed."""
    percent_method: PercentMethod = "delta"
    bayesian: bool = False
    prior: BayesianPrior | None = None
    sprt: SprtSettings | None = None

    def __post_init__(self) -> None:
        if not 0.0 < self.confidence < 100.0:
            raise ValueError("confidence must be strictly between 0 and 100")
        if self.adjusted_alpha is not None and not 0.0 <= self.adjusted_alpha < 1.0:
            raise ValueError("adjusted alpha must be in [0, 1)")

    @property
    def alpha(self) -> float:
        """The unadjusted α = 1 − confidence."""
        return (100.0 - self.confidence) / 100.0

    @property
    def effective_alpha(self) -> float:
        return self.alpha if self.adjusted_alpha is None else self.adjusted_alpha


def _interval(lower: float | None, upper: float | None) -> dict[str, float | None]:
    return {"lower": lower, "upper": upper}


@dataclass(frozen=True, slots=True)
class ExperimentResult:
    """Everything computed for one metric and one test group against control."""

    raw_test: GroupSummary
    raw_control: GroupSummary
    tested_test: GroupSummary
    tested_control: GroupSummary
    alpha: float
    fixed: FrequentistResult
    sequential: SequentialResult | None
    cuped: CupedResult | None
    bayesian: BayesianResult | None = None
    sprt: SprtResult | None = None

    @property
    def cuped_applied(self) -> bool:
        return self.cuped is not None and self.cuped.applied

    @property
    def cuped_reason(self) -> str:
        """Why CUPED was or was not applied ("applied", "CUPED off", ...)."""
        return "CUPED off" if self.cuped is None else self.cuped.reason

    @property
    def sequential_applied(self) -> bool:
        return self.sequential is not None

    @property
    def p_value(self) -> float | None:
        return self.fixed.p_value

    @property
    def reason(self) -> str | None:
        """Why some figures are null, if any are."""
        found: list[str] = []
        parts = [self.fixed.reason, self.fixed.percent.reason]
        if self.sequential is not None:
            parts += [self.sequential.reason, self.sequential.percent.reason]
        for r in parts:
            if r and r not in found:
                found.append(r)
        return "; ".join(found) or None

    def to_dict(self) -> dict[str, Any]:
        """The experiment result entry with the contract's field names, plus Bayesian/SPRT ones if asked."""
        f = self.fixed
        s = self.sequential
        seq_half, seq_lo, seq_hi = (s.half_width, s.lower, s.upper) if s else (f.half_width, f.lower, f.upper)
        sp = s.percent if s else f.percent
        out: dict[str, Any] = {
            "value": f.delta,
            "confidence_interval_delta": f.half_width,
            "confidence_interval": _interval(f.lower, f.upper),
            "percent_change": f.percent.percent_change,
            "percent_confidence_interval_delta": f.percent.half_width,
            "percent_confidence_interval": _interval(f.percent.lower, f.percent.upper),
            "sequential_testing_confidence_interval_delta": seq_half,
            "sequential_testing_confidence_interval": _interval(seq_lo, seq_hi),
            "percent_sequential_testing_confidence_interval_delta": sp.half_width,
            "percent_sequential_testing_confidence_interval": _interval(sp.lower, sp.upper),
            "test_mean": self.raw_test.mean,
            "control_mean": self.raw_control.mean,
            "test_std": self.tested_test.std_error,
            "control_std": self.tested_control.std_error,
            "test_units": self.raw_test.n,
            "control_units": self.raw_control.n,
            "p_value": f.p_value,
            "sequentialTestingPValue": s.p_value if s else f.p_value,
            "adjustedAlpha": self.alpha,
            "reason": self.reason,
        }
        if self.bayesian is not None:
            b = self.bayesian
            out |= {
                "chanceToBeatControl": b.chance_to_beat_control,
                "expectedLoss": b.expected_loss,
                "posteriorMean": b.posterior_mean,
                "posteriorStdDev": b.posterior_std_dev,
                "credibleInterval": _interval(b.credible_lower, b.credible_upper),
            }
        if self.sprt is not None:
            out |= {
                "sprtDecision": self.sprt.decision,
                "sprtLLR": self.sprt.llr,
                "sprtUpperBoundary": self.sprt.upper_boundary,
                "sprtLowerBoundary": self.sprt.lower_boundary,
                "sprtMDE": self.sprt.mde,
            }
        return _sanitised(out)


def _sanitised(entry: dict[str, Any]) -> dict[str, Any]:
    """Last guard of the never-NaN rule: non-finite floats become None, in nested objects too."""
    return {k: _sanitised(v) if isinstance(v, dict) else _finite(v) for k, v in entry.items()}


def _finite(value: object) -> object:
    return None if isinstance(value, float) and not math.isfinite(value) else value


@dataclass(frozen=True, slots=True)
class _Prepared:
    raw_test: GroupSummary
    raw_control: GroupSummary
    cuped: CupedResult | None

    @property
    def tested(self) -> tuple[GroupSummary, GroupSummary]:
        if self.cuped is None:
            return self.raw_test, self.raw_control
        return self.cuped.test, self.cuped.control


_MEAN_KINDS = (SampleMeanStatistic, CupedStatistic)
_RATIO_KINDS = (RatioStatistic, CupedRatioStatistic)


def _prepare(test: Statistic, control: Statistic, options: ResultOptions) -> _Prepared:
    same_kind = (isinstance(test, _MEAN_KINDS) and isinstance(control, _MEAN_KINDS)) or (
        isinstance(test, _RATIO_KINDS) and isinstance(control, _RATIO_KINDS)
    )
    if not same_kind:
        raise TypeError("test and control must both be mean or both be ratio statistics")
    raw_t, raw_c = test.summary(), control.summary()
    if not options.cuped:
        return _Prepared(raw_t, raw_c, None)
    if isinstance(test, CupedStatistic) and isinstance(control, CupedStatistic):
        return _Prepared(raw_t, raw_c, cuped_adjust(test, control))
    if isinstance(test, CupedRatioStatistic) and isinstance(control, CupedRatioStatistic):
        return _Prepared(raw_t, raw_c, cuped_adjust(test, control))
    return _Prepared(raw_t, raw_c, CupedResult(False, "no pre-exposure data", None, raw_t, raw_c))


def _finish(
    prep: _Prepared, alpha: float, options: ResultOptions, higher_is_better: bool
) -> ExperimentResult:
    t, c = prep.tested
    reference = prep.raw_control.mean
    fixed = frequentist_test(t, c, alpha, reference_mean=reference, percent_method=options.percent_method)
    seq = None
    if is_sequential_period(options.sequential, options.elapsed_fraction):
        seq = sequential_test(t, c, alpha, reference_mean=reference, percent_method=options.percent_method)
    bayes = None
    if options.bayesian:
        bayes = bayesian_test(
            fixed.delta,
            fixed.variance,
            options.prior,
            credibility=options.confidence / 100.0,
            higher_is_better=higher_is_better,
        )
    sprt = None
    if options.sprt is not None:
        sprt = sprt_test(fixed.delta, fixed.variance, reference, alpha, options.sprt)
    return ExperimentResult(prep.raw_test, prep.raw_control, t, c, alpha, fixed, seq, prep.cuped, bayes, sprt)


def experiment_result(
    test: Statistic,
    control: Statistic,
    options: ResultOptions | None = None,
    *,
    higher_is_better: bool = True,
) -> ExperimentResult:
    """The full result entry of one metric for one test group against control."""
    options = options or ResultOptions()
    return _finish(_prepare(test, control, options), options.effective_alpha, options, higher_is_better)


@dataclass(frozen=True, slots=True)
class ScorecardRow:
    """One metric for one test group: its role in the corrections and the two group statistics."""

    metric_id: str
    group: str
    category: Category
    test: Statistic
    control: Statistic
    higher_is_better: bool = True


def compute_scorecard(
    rows: Sequence[ScorecardRow], options: ResultOptions | None = None, flags: CorrectionFlags | None = None
) -> list[ExperimentResult]:
    """All entries of a request: p-values first, then α per entry from the corrections, then intervals."""
    options = options or ResultOptions()
    preps = [_prepare(r.test, r.control, options) for r in rows]
    alpha = options.effective_alpha
    if flags is None:
        alphas = [alpha] * len(rows)
    else:
        p_values = [frequentist_test(*prep.tested, 0.0).p_value for prep in preps]
        entries = [
            CorrectionEntry(r.metric_id, r.group, r.category, p) for r, p in zip(rows, p_values, strict=True)
        ]
        alphas = adjusted_alphas(entries, alpha, flags)
    return [
        _finish(prep, a, options, r.higher_is_better) for prep, a, r in zip(preps, alphas, rows, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class HoldoutResult:
    """A holdout monitoring-metric entry: the experiment figures plus topline impact and reverse power."""

    result: ExperimentResult
    topline: ToplineImpact
    reverse_power: float | None

    def to_dict(self) -> dict[str, Any]:
        """The holdout result entry with the contract's camelCase field names."""
        e = self.result.to_dict()
        t = self.topline
        return _sanitised(
            {
                "absoluteChange": e["value"],
                "confidenceIntervalDelta": e["confidence_interval_delta"],
                "confidenceInterval": e["confidence_interval"],
                "percentChange": e["percent_change"],
                "sequentialTestingConfidenceIntervalDelta": e["sequential_testing_confidence_interval_delta"],
                "sequentialTestingConfidenceInterval": e["sequential_testing_confidence_interval"],
                "percentConfidenceIntervalDelta": e["percent_confidence_interval_delta"],
                "percentConfidenceInterval": e["percent_confidence_interval"],
                "percentSequentialTestingConfidenceIntervalDelta": e[
                    "percent_sequential_testing_confidence_interval_delta"
                ],
                "percentSequentialTestingConfidenceInterval": e[
                    "percent_sequential_testing_confidence_interval"
                ],
                "testMean": e["test_mean"],
                "controlMean": e["control_mean"],
                "testStd": e["test_std"],
                "controlStd": e["control_std"],
                "testUnits": e["test_units"],
                "controlUnits": e["control_units"],
                "pValue": e["p_value"],
                "sequentialTestingPValue": e["sequentialTestingPValue"],
                "adjustedAlpha": e["adjustedAlpha"],
                "reason": e["reason"],
                "reversePower": self.reverse_power,
                "absoluteToplineImpact": t.absolute,
                "absoluteToplineImpactDelta": t.absolute_delta,
                "relativeToplineImpact": t.relative,
                "relativeToplineImpactDelta": t.relative_delta,
                "projectedAbsoluteToplineImpact": t.projected_absolute,
                "projectedAbsoluteToplineImpactDelta": t.projected_absolute_delta,
                "projectedRelativeToplineImpact": t.projected_relative,
                "projectedRelativeToplineImpactDelta": t.projected_relative_delta,
            }
        )


def holdout_result(
    test: Statistic,
    control: Statistic,
    options: ResultOptions | None = None,
    *,
    pass_percentage: float | None = None,
    higher_is_better: bool = True,
) -> HoldoutResult:
    """A holdout entry: test = units not held out, control = held-out units."""
    options = options or ResultOptions()
    result = experiment_result(test, control, options, higher_is_better=higher_is_better)
    f = result.fixed
    topline = topline_impact(
        f.delta,
        f.half_width,
        result.raw_control.mean,
        result.raw_test.n,
        result.raw_control.n,
        pass_percentage,
    )
    rp = reverse_power(f.variance, result.raw_control.mean, result.alpha)
    return HoldoutResult(result, topline, finite_or_none(rp))
