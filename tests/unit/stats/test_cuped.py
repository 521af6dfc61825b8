"""CUPED against statsmodels OLS: θ, adjusted delta, adjusted errors, eligibility, ratio metrics."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st

from expconsole.stats import (
    CupedRatioStatistic,
    CupedStatistic,
    ResultOptions,
    cuped_adjust,
    experiment_result,
)
from tests.unit.stats.reference import assert_close, linearised, welch_reference


def _ancova(x_t: np.ndarray, p_t: np.ndarray, x_c: np.ndarray, p_c: np.ndarray) -> tuple[float, float]:
    """θ and the adjusted delta as the coefficients of p and treatment in x ~ 1 + treatment + p."""
    x = np.concatenate([x_t, x_c])
    treat = np.concatenate([np.ones(len(x_t)), np.zeros(len(x_c))])
    p = np.concatenate([p_t, p_c])
    fit = sm.OLS(x, np.column_stack([np.ones(len(x)), treat, p])).fit()
    return float(fit.params[2]), float(fit.params[1])


def _groups(seed: int, n_t: int, n_c: int, slope: float, zero_share: float) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    p_t = rng.gamma(2.0, 3.0, n_t) * (rng.random(n_t) > zero_share)
    p_c = rng.gamma(2.0, 3.0, n_c) * (rng.random(n_c) > zero_share)
    x_t = 1.0 + slope * p_t + rng.normal(0.0, 2.0, n_t) + 0.4
    x_c = 1.0 + slope * p_c + rng.normal(0.0, 2.0, n_c)
    return x_t, p_t, x_c, p_c


@settings(max_examples=80, deadline=None, database=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(60, 400),
    st.integers(60, 400),
    st.floats(0.3, 3.0),
    st.floats(0.0, 0.8),
    st.sampled_from([0.05, 0.2]),
)
def test_theta_delta_and_errors_match_ols_and_adjusted_values(
    seed: int, n_t: int, n_c: int, slope: float, zero_share: float, alpha: float
) -> None:
    x_t, p_t, x_c, p_c = _groups(seed, n_t, n_c, slope, zero_share)
    theta, delta = _ancova(x_t, p_t, x_c, p_c)
    res = experiment_result(
        CupedStatistic.from_values(x_t, p_t),
        CupedStatistic.from_values(x_c, p_c),
        ResultOptions(confidence=100 * (1 - alpha)),
    )
    assert res.cuped is not None and res.cuped.applied, res.cuped_reason
    assert_close(res.cuped.theta, theta)
    p_bar = np.mean(np.concatenate([p_t, p_c]))
    adj_t, adj_c = x_t - theta * (p_t - p_bar), x_c - theta * (p_c - p_bar)
    ref = welch_reference(adj_t, adj_c, alpha)
    out = res.to_dict()
    assert_close(out["value"], delta)
    assert_close(out["value"], ref.delta)
    assert_close(out["test_std"], ref.se_test)
    assert_close(out["control_std"], ref.se_control)
    assert_close(out["p_value"], ref.p_value, abs_tol=1e-15)
    assert_close(out["confidence_interval_delta"], ref.half_width)
    # means stay raw; the percent change divides the adjusted delta by the raw control mean
    assert_close(out["test_mean"], float(np.mean(x_t)))
    assert_close(out["control_mean"], float(np.mean(x_c)))
    mc = float(np.mean(x_c))
    assert_close(out["percent_change"], 100 * delta / mc)
    # delta method with the adjusted variances and the adjusted test mean mc + Δ on the raw scale
    var_pct = ref.se_test**2 / mc**2 + (mc + delta) ** 2 * ref.se_control**2 / mc**4
    assert_close(out["percent_confidence_interval_delta"], 100 * ref.crit * np.sqrt(var_pct))
    assert res.cuped.variance_adjusted is not None and res.cuped.variance_unadjusted is not None
    assert res.cuped.variance_adjusted < res.cuped.variance_unadjusted


@settings(max_examples=50, deadline=None, database=None)
@given(st.integers(0, 2**32 - 1), st.integers(60, 300), st.integers(60, 300))
def test_ratio_cuped_uses_the_linearised_ratios(seed: int, n_t: int, n_c: int) -> None:
    rng = np.random.default_rng(seed)

    def group(n: int, rate: float) -> tuple[np.ndarray, ...]:
        activity = rng.gamma(2.0, 2.0, n)
        pd = rng.poisson(activity) + 1.0
        pm = rng.binomial(pd.astype(int), 0.3).astype(float)
        d = rng.poisson(activity) + 1.0
        m = rng.binomial(d.astype(int), rate).astype(float) + 0.5 * pm
        return m, d, pm, pd

    m_t, d_t, pm_t, pd_t = group(n_t, 0.33)
    m_c, d_c, pm_c, pd_c = group(n_c, 0.30)
    l_t, l_c = linearised(m_t, d_t), linearised(m_c, d_c)
    lp_t, lp_c = linearised(pm_t, pd_t), linearised(pm_c, pd_c)
    theta, delta = _ancova(l_t, lp_t, l_c, lp_c)
    cr = cuped_adjust(
        CupedRatioStatistic.from_values(m_t, d_t, pm_t, pd_t),
        CupedRatioStatistic.from_values(m_c, d_c, pm_c, pd_c),
    )
    if not cr.applied:
        assert cr.reason == "adjustment does not lower the variance"
        return
    assert_close(cr.theta, theta)
    assert cr.test.mean is not None and cr.control.mean is not None
    assert_close(cr.test.mean - cr.control.mean, delta, abs_tol=1e-14)
    lp_bar = np.mean(np.concatenate([lp_t, lp_c]))
    ref = welch_reference(l_t - theta * (lp_t - lp_bar), l_c - theta * (lp_c - lp_bar), 0.05)
    assert_close(cr.test.std_error, ref.se_test)
    assert_close(cr.control.std_error, ref.se_control)


def _stat(x: list[float] | np.ndarray, p: list[float] | np.ndarray) -> CupedStatistic:
    return CupedStatistic.from_values(np.asarray(x, float), np.asarray(p, float))


def test_not_applied_with_100_units_or_fewer() -> None:
    rng = np.random.default_rng(1)
    p = rng.normal(5, 1, 50)
    x = p + rng.normal(0, 0.1, 50)
    res = cuped_adjust(_stat(x, p), _stat(x + 1, p))  # exactly 100 units
    assert not res.applied and res.reason == "not more than 100 units"
    assert res.control.mean == pytest.approx(float(np.mean(x + 1)))


def test_not_applied_with_5_percent_or_fewer_units_with_pre_data() -> None:
    rng = np.random.default_rng(2)
    x_t, x_c = rng.normal(5, 1, 100), rng.normal(5, 1, 100)
    p_t, p_c = np.zeros(100), np.zeros(100)
    p_t[:5], p_c[:5] = x_t[:5], x_c[:5]  # 10 of 200 units: exactly 5%
    res = cuped_adjust(_stat(x_t, p_t), _stat(x_c, p_c))
    assert not res.applied and res.reason == "not more than 5% of units have pre-exposure data"
    p_t[5] = 1.0  # 11 of 200: more than 5%
    assert cuped_adjust(_stat(x_t, p_t), _stat(x_c, p_c)).reason != res.reason


def test_not_applied_without_pre_exposure_data() -> None:
    x = np.arange(120.0)
    res = cuped_adjust(_stat(x, np.zeros(120)), _stat(x, np.zeros(120)))
    assert not res.applied and res.reason == "no pre-exposure data" and res.theta is None
    out = experiment_result(
        CupedStatistic.from_values(x + 1, np.zeros(120)), CupedStatistic.from_values(x, np.zeros(120))
    ).to_dict()
    assert out["value"] == pytest.approx(1.0)
    assert out["test_std"] == pytest.approx(float(np.std(x, ddof=1) / np.sqrt(120)))


def test_not_applied_when_the_adjustment_does_not_lower_the_variance() -> None:
    # p orthogonal to x within each group: θ = 0 exactly, the variance is unchanged
    x = np.tile([1.0, -1.0, 1.0, -1.0], 40)
    p = np.tile([1.0, 1.0, -1.0, -1.0], 40)
    res = cuped_adjust(_stat(x + 0.5, p), _stat(x, p))
    assert res.theta == 0.0
    assert not res.applied and res.reason == "adjustment does not lower the variance"


def test_constant_pre_values_and_zero_ratio_denominators() -> None:
    x = np.arange(120.0)
    res = cuped_adjust(_stat(x, np.ones(120)), _stat(x, np.ones(120)))
    assert not res.applied and res.reason == "pre-exposure values are constant within groups"
    ones, zeros = np.ones(120), np.zeros(120)
    r = cuped_adjust(
        CupedRatioStatistic.from_values(x, ones, x, zeros), CupedRatioStatistic.from_values(x, ones, x, zeros)
    )
    assert not r.applied and "zero denominator" in r.reason


def test_cuped_off_reports_unadjusted() -> None:
    x_t, p_t, x_c, p_c = _groups(4, 300, 300, 2.0, 0.1)
    on = experiment_result(CupedStatistic.from_values(x_t, p_t), CupedStatistic.from_values(x_c, p_c))
    off = experiment_result(
        CupedStatistic.from_values(x_t, p_t), CupedStatistic.from_values(x_c, p_c), ResultOptions(cuped=False)
    )
    assert on.cuped_applied and not off.cuped_applied and off.cuped_reason == "CUPED off"
    assert_close(off.to_dict()["value"], float(np.mean(x_t) - np.mean(x_c)))
    assert on.to_dict()["confidence_interval_delta"] < off.to_dict()["confidence_interval_delta"]
