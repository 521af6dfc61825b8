"""Whole result entries: contract fields, their meaning, and never a NaN, infinity or exception."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from expconsole.stats import (
    CupedRatioStatistic,
    CupedStatistic,
    RatioStatistic,
    ResultOptions,
    SampleMeanStatistic,
    SprtSettings,
    experiment_result,
    holdout_result,
)
from tests.unit.stats.reference import (
    assert_close,
    delta_method_percent_half,
    generated_groups,
    welch_reference,
)

CONTRACT_FIELDS = [
    "value",
    "confidence_interval_delta",
    "confidence_interval",
    "percent_change",
    "percent_confidence_interval_delta",
    "percent_confidence_interval",
    "sequential_testing_confidence_interval_delta",
    "sequential_testing_confidence_interval",
    "percent_sequential_testing_confidence_interval_delta",
    "percent_sequential_testing_confidence_interval",
    "test_mean",
    "control_mean",
    "test_std",
    "control_std",
    "test_units",
    "control_units",
    "p_value",
    "sequentialTestingPValue",
    "adjustedAlpha",
    "reason",
]

HOLDOUT_FIELDS = [
    "absoluteChange",
    "confidenceIntervalDelta",
    "confidenceInterval",
    "percentChange",
    "sequentialTestingConfidenceIntervalDelta",
    "sequentialTestingConfidenceInterval",
    "percentConfidenceIntervalDelta",
    "percentConfidenceInterval",
    "percentSequentialTestingConfidenceIntervalDelta",
    "percentSequentialTestingConfidenceInterval",
    "testMean",
    "controlMean",
    "testStd",
    "controlStd",
    "testUnits",
    "controlUnits",
    "pValue",
    "sequentialTestingPValue",
    "adjustedAlpha",
    "reason",
    "reversePower",
    "absoluteToplineImpact",
    "absoluteToplineImpactDelta",
    "relativeToplineImpact",
    "relativeToplineImpactDelta",
    "projectedAbsoluteToplineImpact",
    "projectedAbsoluteToplineImpactDelta",
    "projectedRelativeToplineImpact",
    "projectedRelativeToplineImpactDelta",
]


def test_entry_has_exactly_the_contract_fields_with_their_values() -> None:
    t, c = generated_groups(21, 1669, 1589, "lognormal")
    out = experiment_result(
        SampleMeanStatistic.from_values(t), SampleMeanStatistic.from_values(c), ResultOptions(confidence=80)
    ).to_dict()
    assert list(out) == CONTRACT_FIELDS
    ref = welch_reference(t, c, 0.2)
    mc = float(np.mean(c))
    assert_close(out["value"], ref.delta)
    assert_close(out["confidence_interval_delta"], ref.half_width)
    assert_close(out["confidence_interval"]["lower"], ref.delta - ref.half_width)
    assert_close(out["confidence_interval"]["upper"], ref.delta + ref.half_width)
    assert_close(out["percent_change"], 100 * ref.delta / mc)
    half = delta_method_percent_half(t, c, ref.crit)
    assert_close(out["percent_confidence_interval_delta"], half)
    assert_close(out["percent_confidence_interval"]["lower"], 100 * ref.delta / mc - half)
    assert_close(out["test_mean"], float(np.mean(t)))
    assert_close(out["control_mean"], mc)
    assert_close(out["test_std"], float(stats.sem(t)))
    assert_close(out["control_std"], float(stats.sem(c)))
    assert out["test_units"] == 1669 and isinstance(out["test_units"], int)
    assert out["control_units"] == 1589
    assert_close(out["p_value"], ref.p_value)
    assert out["sequentialTestingPValue"] == out["p_value"]
    assert out["adjustedAlpha"] == pytest.approx(0.2)
    # the peer's example relation: the 80% half-width is 1.2816·√(test_std² + control_std²)
    assert out["confidence_interval_delta"] == pytest.approx(
        1.2816 * math.hypot(out["test_std"], out["control_std"]), rel=1e-4
    )


def test_bayesian_and_sprt_fields_only_when_asked() -> None:
    t, c = generated_groups(2, 300, 300, "normal")
    st_, sc = SampleMeanStatistic.from_values(t), SampleMeanStatistic.from_values(c)
    out = experiment_result(
        st_, sc, ResultOptions(bayesian=True, sprt=SprtSettings(mde=0.05, relative=True))
    ).to_dict()
    assert {
        "chanceToBeatControl",
        "expectedLoss",
        "posteriorMean",
        "posteriorStdDev",
        "credibleInterval",
    } <= set(out)
    assert {"sprtDecision", "sprtLLR", "sprtUpperBoundary", "sprtLowerBoundary", "sprtMDE"} <= set(out)
    assert list(experiment_result(st_, sc).to_dict()) == CONTRACT_FIELDS


def test_ratio_entry_and_fieller_option() -> None:
    rng = np.random.default_rng(8)
    d_t, d_c = rng.integers(1, 6, 800).astype(float), rng.integers(1, 6, 800).astype(float)
    m_t, m_c = (
        rng.binomial(d_t.astype(int), 0.4).astype(float),
        rng.binomial(d_c.astype(int), 0.37).astype(float),
    )
    res = experiment_result(
        RatioStatistic.from_values(m_t, d_t),
        RatioStatistic.from_values(m_c, d_c),
        ResultOptions(percent_method="fieller"),
    )
    out = res.to_dict()
    r_t, r_c = m_t.sum() / d_t.sum(), m_c.sum() / d_c.sum()
    assert_close(out["test_mean"], float(r_t))
    assert_close(out["percent_change"], float(100 * (r_t / r_c - 1)))
    lo, hi = out["percent_confidence_interval"]["lower"], out["percent_confidence_interval"]["upper"]
    assert lo < out["percent_change"] < hi
    assert_close(out["percent_confidence_interval_delta"], (hi - lo) / 2)


def test_holdout_entry_has_the_contract_fields() -> None:
    t, c = generated_groups(4, 500, 50, "poisson")
    out = holdout_result(
        SampleMeanStatistic.from_values(t), SampleMeanStatistic.from_values(c), pass_percentage=10
    ).to_dict()
    assert list(out) == HOLDOUT_FIELDS


def test_undefined_entry_is_nulls_with_a_reason() -> None:
    res = experiment_result(
        SampleMeanStatistic.from_values([5.0]), SampleMeanStatistic.from_values([0.0, 0.0])
    )
    out = res.to_dict()
    assert (
        out["value"] == 5.0
        and out["p_value"] is None
        and out["confidence_interval"] == {"lower": None, "upper": None}
    )
    assert out["test_std"] is None and out["control_std"] == 0.0 and out["percent_change"] is None
    assert res.reason is not None and "fewer than 2 units" in res.reason
    assert out["reason"] == res.reason  # the entry itself says why its figures are null
    out = experiment_result(
        CupedRatioStatistic.from_values([1.0, 2.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]),
        CupedRatioStatistic.from_values([1.0, 2.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]),
    ).to_dict()
    assert out["value"] is None and out["test_mean"] is None and out["control_mean"] == 1.5


def test_mixing_mean_and_ratio_statistics_is_a_programming_error() -> None:
    with pytest.raises(TypeError):
        experiment_result(
            SampleMeanStatistic.from_values([1.0, 2.0]), RatioStatistic.from_values([1.0], [1.0])
        )
    with pytest.raises(ValueError):
        ResultOptions(confidence=100)


_weird = st.one_of(
    st.just(0.0),
    st.integers(-3, 3).map(float),
    st.floats(-1e200, 1e200, allow_nan=False, allow_infinity=False),
    st.floats(-1e-200, 1e-200, allow_nan=False, allow_infinity=False),
)


@settings(max_examples=400, deadline=None, database=None)
@given(
    st.lists(st.tuples(_weird, _weird, _weird, _weird), min_size=0, max_size=6),
    st.lists(st.tuples(_weird, _weird, _weird, _weird), min_size=0, max_size=6),
    st.sampled_from(["mean", "cuped", "ratio", "cuped_ratio"]),
    st.booleans(),
    st.sampled_from(["delta", "fieller"]),
)
def test_any_input_gives_finite_or_null_figures_and_never_raises(
    test_rows: list[tuple[float, ...]],
    control_rows: list[tuple[float, ...]],
    kind: str,
    sequential: bool,
    method: str,
) -> None:
    def build(rows: list[tuple[float, ...]]) -> object:
        cols = [np.array([r[i] for r in rows], dtype=float) for i in range(4)]
        if kind == "mean":
            return SampleMeanStatistic.from_values(cols[0])
        if kind == "cuped":
            return CupedStatistic.from_values(cols[0], cols[1])
        if kind == "ratio":
            return RatioStatistic.from_values(cols[0], cols[1])
        return CupedRatioStatistic.from_values(*cols)

    with np.errstate(all="ignore"):
        t, c = build(test_rows), build(control_rows)
    options = ResultOptions(
        sequential=sequential,
        percent_method=method,
        bayesian=True,
        sprt=SprtSettings(mde=0.1, relative=True),  # type: ignore[arg-type]
    )
    out = experiment_result(t, c, options).to_dict()  # type: ignore[arg-type]
    json.dumps(out, allow_nan=False)
    held = holdout_result(t, c, options, pass_percentage=5).to_dict()  # type: ignore[arg-type]
    json.dumps(held, allow_nan=False)
