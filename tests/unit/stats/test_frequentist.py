"""Fixed-horizon test against scipy: Welch t / z, intervals, percent change, Fieller, ratios."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from expconsole.stats import (
    GroupSummary,
    RatioStatistic,
    SampleMeanStatistic,
    fieller_interval,
    frequentist_test,
    percent_interval,
)
from tests.unit.stats.reference import (
    assert_close,
    delta_method_percent_half,
    fieller_roots,
    generated_groups,
    linearised,
    unit_values,
    welch_reference,
)

ALPHAS = st.sampled_from([0.05, 0.2, 0.1, 0.01, 0.003])


def _check_against_reference(t: np.ndarray, c: np.ndarray, alpha: float) -> None:
    ref = welch_reference(t, c, alpha)
    res = frequentist_test(
        SampleMeanStatistic.from_values(t).summary(), SampleMeanStatistic.from_values(c).summary(), alpha
    )
    scale = float(max(np.max(np.abs(t)), np.max(np.abs(c)), 1.0))
    assert res.uses_t == ref.uses_t
    assert_close(res.delta, ref.delta, abs_tol=1e-12 * scale)
    assert_close(res.variance, ref.variance)
    assert_close(res.dof, ref.dof)
    assert_close(res.critical, ref.crit)
    assert_close(res.p_value, ref.p_value, abs_tol=1e-15)
    assert_close(res.half_width, ref.half_width)
    assert_close(res.lower, ref.delta - ref.half_width, abs_tol=1e-12 * scale)
    assert_close(res.upper, ref.delta + ref.half_width, abs_tol=1e-12 * scale)
    mc = float(np.mean(c))
    if mc != 0:
        assert_close(res.percent.percent_change, 100 * ref.delta / mc, abs_tol=1e-10 * scale / abs(mc))
        assert_close(res.percent.half_width, delta_method_percent_half(t, c, ref.crit))
    else:
        assert res.percent.percent_change is None and res.percent.half_width is None
        assert res.reason == "control mean is 0"


@settings(max_examples=400, deadline=None, database=None)
@given(unit_values(2, 40), unit_values(2, 40), ALPHAS)
def test_small_groups_match_scipy_welch(test: list[float], control: list[float], alpha: float) -> None:
    t, c = np.array(test), np.array(control)
    assume(np.var(t, ddof=1) + np.var(c, ddof=1) > 1e-6)
    _check_against_reference(t, c, alpha)


@settings(max_examples=80, deadline=None, database=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(30, 400),
    st.integers(30, 400),
    st.sampled_from(["normal", "lognormal", "poisson"]),
    ALPHAS,
)
def test_generated_groups_match_scipy_on_both_sides_of_nu_100(
    seed: int, n_t: int, n_c: int, kind: str, alpha: float
) -> None:
    t, c = generated_groups(seed, n_t, n_c, kind)
    _check_against_reference(t, c, alpha)


def test_t_replaces_normal_below_100_degrees_of_freedom() -> None:
    rng = np.random.default_rng(11)
    small = frequentist_test(
        SampleMeanStatistic.from_values(rng.normal(0, 1, 20)).summary(),
        SampleMeanStatistic.from_values(rng.normal(0, 1, 20)).summary(),
        0.05,
    )
    assert small.uses_t and small.dof is not None and small.dof < 100
    assert_close(small.critical, float(stats.t.ppf(0.975, small.dof)))
    big = frequentist_test(
        SampleMeanStatistic.from_values(rng.normal(0, 1, 500)).summary(),
        SampleMeanStatistic.from_values(rng.normal(0, 1, 500)).summary(),
        0.05,
    )
    assert not big.uses_t
    assert_close(big.critical, float(stats.norm.ppf(0.975)))


def test_eighty_percent_half_width_is_1_2816_times_the_combined_standard_errors() -> None:
    rng = np.random.default_rng(5)
    t, c = rng.normal(61.5, 30.0, 1669), rng.normal(62.1, 29.0, 1589)
    ts, cs = SampleMeanStatistic.from_values(t).summary(), SampleMeanStatistic.from_values(c).summary()
    res = frequentist_test(ts, cs, 0.2)
    assert ts.std_error is not None and cs.std_error is not None
    assert_close(ts.std_error, float(stats.sem(t)))
    combined = math.sqrt(ts.std_error**2 + cs.std_error**2)
    assert res.half_width is not None
    assert math.isclose(res.half_width, 1.2816 * combined, rel_tol=1e-4)
    assert_close(res.half_width, float(stats.norm.ppf(0.9)) * combined)


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.floats(1.0, 100.0),
    st.floats(-100.0, 100.0).filter(lambda v: abs(v) > 0.5),
    st.floats(0.001, 4.0),
    st.floats(0.001, 4.0),
    st.sampled_from([1.0, 1.6449, 1.96, 2.5758]),
)
def test_fieller_matches_the_roots_of_its_quadratic(
    mt: float, mc: float, var_t: float, var_c: float, crit: float
) -> None:
    g = crit**2 * var_c / mc**2
    bounds = fieller_interval(mt, mc, var_t, var_c, crit)
    if g >= 1:
        assert bounds is None
        return
    assume(g < 0.999)
    lo, hi = fieller_roots(mt, mc, var_t, var_c, crit)
    assert bounds is not None
    assert_close(bounds[0], lo, rel=1e-8, abs_tol=1e-9)
    assert_close(bounds[1], hi, rel=1e-8, abs_tol=1e-9)


def test_fieller_percent_interval_and_its_unbounded_case() -> None:
    pct = percent_interval(1.0, 0.04, 0.09, 10.0, 1.96, "fieller")
    lo, hi = fieller_roots(11.0, 10.0, 0.04, 0.09, 1.96)
    assert_close(pct.lower, 100 * (lo - 1))
    assert_close(pct.upper, 100 * (hi - 1))
    assert_close(pct.half_width, 50 * (hi - lo))
    assert_close(pct.percent_change, 10.0)
    unbounded = percent_interval(1.0, 0.04, 30.0, 10.0, 1.96, "fieller")  # g = 1.96²·30/100 > 1
    assert unbounded.percent_change == pytest.approx(10.0)
    assert unbounded.lower is None and unbounded.upper is None and unbounded.half_width is None
    assert unbounded.reason is not None and "Fieller" in unbounded.reason


@settings(max_examples=80, deadline=None, database=None)
@given(st.integers(0, 2**32 - 1), st.integers(5, 300), st.integers(5, 300), ALPHAS)
def test_ratio_metrics_match_welch_on_linearised_values(seed: int, n_t: int, n_c: int, alpha: float) -> None:
    rng = np.random.default_rng(seed)
    d_t, d_c = rng.integers(1, 8, n_t).astype(float), rng.integers(1, 8, n_c).astype(float)
    m_t, m_c = (
        rng.binomial(d_t.astype(int), 0.32).astype(float),
        rng.binomial(d_c.astype(int), 0.3).astype(float),
    )
    lt, lc = linearised(m_t, d_t), linearised(m_c, d_c)
    assume(np.var(lt) + np.var(lc) > 1e-9)
    ref = welch_reference(lt, lc, alpha)
    res = frequentist_test(
        RatioStatistic.from_values(m_t, d_t).summary(), RatioStatistic.from_values(m_c, d_c).summary(), alpha
    )
    assert_close(res.delta, float(m_t.sum() / d_t.sum() - m_c.sum() / d_c.sum()), abs_tol=1e-14)
    assert_close(res.variance, ref.variance)
    assert_close(res.p_value, ref.p_value, abs_tol=1e-15)
    assert_close(res.half_width, ref.half_width)
    assert res.uses_t == ref.uses_t


def test_undefined_cases_give_none_and_a_reason() -> None:
    two = SampleMeanStatistic.from_values([1.0, 2.0]).summary()
    one = SampleMeanStatistic.from_values([1.0]).summary()
    res = frequentist_test(one, two, 0.05)
    assert res.delta == pytest.approx(-0.5)
    assert res.p_value is None and res.half_width is None and res.reason == "fewer than 2 units"
    empty = SampleMeanStatistic.from_values([]).summary()
    res = frequentist_test(two, empty, 0.05)
    assert res.delta is None and res.p_value is None and res.reason == "no units"
    const = SampleMeanStatistic.from_values([3.0, 3.0, 3.0]).summary()
    res = frequentist_test(const, const, 0.05)
    assert res.delta == 0.0 and res.p_value is None and res.reason == "zero variance in both groups"
    zero_control = SampleMeanStatistic.from_values([0.0, 0.0, 1.0, -1.0]).summary()
    res = frequentist_test(two, zero_control, 0.05)
    assert res.p_value is not None and res.half_width is not None
    assert res.percent.percent_change is None and res.percent.half_width is None
    assert res.reason == "control mean is 0"
    ratio = RatioStatistic.from_values([1.0, 2.0], [0.0, 0.0]).summary()
    res = frequentist_test(ratio, ratio, 0.05)
    assert res.delta is None and res.reason == "denominator mean is 0"
    res = frequentist_test(two, zero_control, 0.0)
    assert res.p_value is not None and res.half_width is None


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_one_constant_group_still_has_a_test() -> None:
    res = frequentist_test(
        SampleMeanStatistic.from_values([2.0, 2.0, 2.0]).summary(),
        SampleMeanStatistic.from_values([1.0, 2.0, 3.0, 4.0]).summary(),
        0.05,
    )
    ref = stats.ttest_ind([2.0, 2.0, 2.0], [1.0, 2.0, 3.0, 4.0], equal_var=False)
    assert_close(res.p_value, float(ref.pvalue))


def test_summary_with_explicit_fields() -> None:
    t = GroupSummary(1000, 10.5, 4.0)
    c = GroupSummary(1000, 10.0, 4.0)
    res = frequentist_test(t, c, 0.05)
    se = math.sqrt(0.008)
    assert_close(res.p_value, float(2 * stats.norm.sf(0.5 / se)))
    assert_close(res.half_width, float(stats.norm.ppf(0.975)) * se)
