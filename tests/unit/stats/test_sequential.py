"""mSPRT figures recomputed from raw values with scipy; fixed-horizon after the planned end."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from expconsole.stats import ResultOptions, SampleMeanStatistic, experiment_result, sequential_test
from tests.unit.stats.reference import assert_close, generated_groups


def _reference(t: np.ndarray, c: np.ndarray, alpha: float) -> dict[str, float]:
    """The mSPRT of docs/statistics.md, term by term, from the raw values."""
    s2t, s2c = np.var(t, ddof=1), np.var(c, ddof=1)
    v = s2t / len(t) + s2c / len(c)
    crit = stats.norm.ppf(1 - alpha / 2)
    tau = crit**2 * (s2t + s2c) / (len(t) + len(c))
    z_star = math.sqrt((v + tau) / tau * (-2 * math.log(alpha / 2) - math.log(v / (v + tau))))
    delta = float(np.mean(t) - np.mean(c))
    sigma = z_star / (math.sqrt(2) * special.erfinv(1 - alpha))
    p = 2 * stats.norm.sf(abs(delta / math.sqrt(v)), scale=sigma)
    mt, mc = np.mean(t), np.mean(c)
    pct_half = 100 * z_star * math.sqrt(s2t / (len(t) * mc**2) + mt**2 * s2c / (len(c) * mc**4))
    return {
        "z_star": z_star,
        "half": z_star * math.sqrt(v),
        "p": float(p),
        "delta": delta,
        "pct_half": pct_half,
    }


@settings(max_examples=80, deadline=None, database=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(10, 400),
    st.integers(10, 400),
    st.sampled_from(["normal", "lognormal", "poisson"]),
    st.sampled_from([0.05, 0.2, 0.01]),
)
def test_msprt_matches_the_formulas(seed: int, n_t: int, n_c: int, kind: str, alpha: float) -> None:
    t, c = generated_groups(seed, n_t, n_c, kind)
    ref = _reference(t, c, alpha)
    res = sequential_test(
        SampleMeanStatistic.from_values(t).summary(), SampleMeanStatistic.from_values(c).summary(), alpha
    )
    assert_close(res.z_star, ref["z_star"])
    assert_close(res.half_width, ref["half"])
    assert_close(res.lower, ref["delta"] - ref["half"], abs_tol=1e-12)
    assert_close(res.upper, ref["delta"] + ref["half"], abs_tol=1e-12)
    assert_close(res.p_value, ref["p"], abs_tol=1e-15)
    assert_close(res.percent.half_width, ref["pct_half"])
    # always-valid: wider than the fixed interval, and significant exactly when it excludes 0
    fixed = experiment_result(
        SampleMeanStatistic.from_values(t),
        SampleMeanStatistic.from_values(c),
        ResultOptions(confidence=100 * (1 - alpha)),
    ).fixed
    assert fixed.half_width is not None and res.half_width is not None and res.p_value is not None
    assert res.half_width > fixed.half_width
    assert (res.p_value < alpha) == (abs(ref["delta"]) > ref["half"])


def test_sequential_fields_before_and_after_the_planned_end() -> None:
    t, c = generated_groups(9, 500, 500, "normal")
    stats_t, stats_c = SampleMeanStatistic.from_values(t), SampleMeanStatistic.from_values(c)
    before = experiment_result(
        stats_t, stats_c, ResultOptions(sequential=True, elapsed_fraction=0.5)
    ).to_dict()
    ref = _reference(t, c, 0.05)
    assert_close(before["sequential_testing_confidence_interval_delta"], ref["half"])
    assert_close(before["sequentialTestingPValue"], ref["p"])
    assert before["sequential_testing_confidence_interval_delta"] > before["confidence_interval_delta"]
    for options in (
        ResultOptions(sequential=True, elapsed_fraction=1.0),
        ResultOptions(sequential=True, elapsed_fraction=1.7),
        ResultOptions(sequential=False, elapsed_fraction=0.2),
    ):
        after = experiment_result(stats_t, stats_c, options).to_dict()
        assert after["sequentialTestingPValue"] == after["p_value"]
        assert after["sequential_testing_confidence_interval_delta"] == after["confidence_interval_delta"]
        assert after["sequential_testing_confidence_interval"] == after["confidence_interval"]
        assert after["percent_sequential_testing_confidence_interval"] == after["percent_confidence_interval"]
        assert (
            after["percent_sequential_testing_confidence_interval_delta"]
            == after["percent_confidence_interval_delta"]
        )


def test_sequential_undefined_cases() -> None:
    const = SampleMeanStatistic.from_values([2.0, 2.0, 2.0]).summary()
    res = sequential_test(const, const, 0.05)
    assert res.z_star is None and res.p_value is None and res.reason == "zero variance in both groups"
    one = SampleMeanStatistic.from_values([2.0]).summary()
    res = sequential_test(one, const, 0.05)
    assert res.half_width is None and res.reason == "fewer than 2 units"
    res = sequential_test(const, SampleMeanStatistic.from_values([]).summary(), 0.05)
    assert res.p_value is None and res.reason == "no units"
