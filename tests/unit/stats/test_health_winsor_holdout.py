"""SRM against scipy's chisquare, winsorization against numpy's percentile, holdout figures."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from expconsole.srm import srm_check
from expconsole.stats import (
    SampleMeanStatistic,
    holdout_result,
    minimum_detectable_effect,
    reverse_power,
    topline_impact,
    winsorization_threshold,
    winsorize,
)
from tests.unit.stats.reference import assert_close, generated_groups, unit_values


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.lists(st.integers(1, 100_000), min_size=2, max_size=5),
    st.data(),
)
def test_srm_matches_scipy_chisquare(counts: list[int], data: st.DataObject) -> None:
    weights = data.draw(st.lists(st.integers(1, 100), min_size=len(counts), max_size=len(counts)))
    res = srm_check(counts, weights)
    total = sum(counts)
    expected = [total * w / sum(weights) for w in weights]
    ref = stats.chisquare(counts, expected)
    assert_close(res.chi_squared, float(ref.statistic), abs_tol=1e-9)
    assert_close(res.p_value, float(ref.pvalue), abs_tol=1e-15)
    deviation = max(abs(c / total - w / sum(weights)) for c, w in zip(counts, weights, strict=True)) * 100
    assert_close(res.max_deviation_pp, deviation, abs_tol=1e-12)


def test_srm_thresholds() -> None:
    assert srm_check([5000, 5000], [50, 50]).status == "pass"
    # χ² = 2·100²/5000 = 4 → p ≈ 0.0455: pass
    assert srm_check([5100, 4900], [50, 50]).status == "pass"
    # χ² = 2·140²/5000 = 7.84 → p ≈ 0.0051: warn
    warn = srm_check([5140, 4860], [50, 50])
    assert warn.status == "warn" and warn.p_value is not None and 0.001 < warn.p_value < 0.01
    # χ² = 2·200²/5000 = 16 → p ≈ 6e-5 with a 1-point deviation: fail
    assert srm_check([5200, 4800], [50, 50]).status == "fail"
    # p tiny but the shares are off by only 0.05 point: warn, not fail
    tiny = srm_check([50_050_000, 49_950_000], [50, 50])
    assert tiny.p_value is not None and tiny.p_value < 0.001
    assert tiny.max_deviation_pp == pytest.approx(0.05)
    assert tiny.status == "warn"


def test_srm_undefined_cases() -> None:
    assert srm_check([0, 0], [50, 50]).p_value is None
    zero_size = srm_check([10, 5], [100, 0])
    assert zero_size.status == "fail" and zero_size.p_value is None and zero_size.reason is not None
    assert srm_check([10, 0], [100, 0]).reason == "fewer than 2 groups with a configured size"


@settings(max_examples=100, deadline=None, database=None)
@given(unit_values(1, 300))
def test_winsorization_caps_at_numpys_linear_percentile_of_non_zero_values(values: list[float]) -> None:
    x = np.array(values)
    capped, threshold = winsorize(x)
    nonzero = x[x != 0]
    if nonzero.size == 0:
        assert threshold is None and np.array_equal(capped, x)
        return
    expected = float(np.percentile(nonzero, 99.9))
    assert threshold == expected
    assert np.array_equal(capped, np.where(x > expected, expected, x))


def test_winsorization_ignores_zeros_and_accepts_a_given_threshold() -> None:
    x = np.concatenate([np.zeros(10_000), np.arange(1.0, 1001.0)])
    t = winsorization_threshold(x)
    assert t == pytest.approx(float(np.percentile(np.arange(1.0, 1001.0), 99.9)))
    capped, used = winsorize([1.0, 50.0, 7.0], threshold=10.0)
    assert used == 10.0 and capped.tolist() == [1.0, 10.0, 7.0]


def test_holdout_topline_and_projection() -> None:
    t, c = generated_groups(3, 900, 100, "normal")
    res = holdout_result(
        SampleMeanStatistic.from_values(t), SampleMeanStatistic.from_values(c), pass_percentage=10
    )
    out = res.to_dict()
    delta = float(np.mean(t) - np.mean(c))
    mc = float(np.mean(c))
    assert_close(out["absoluteChange"], delta)
    assert_close(out["absoluteToplineImpact"], delta * 900)
    assert_close(out["relativeToplineImpact"], 100 * delta * 900 / (mc * 1000))
    assert_close(out["absoluteToplineImpactDelta"], out["confidenceIntervalDelta"] * 900)
    assert_close(out["relativeToplineImpactDelta"], 100 * out["confidenceIntervalDelta"] * 900 / (mc * 1000))
    assert_close(out["projectedAbsoluteToplineImpact"], delta * 900 / 0.9)
    assert_close(out["projectedRelativeToplineImpact"], 100 * delta * 900 / (mc * 1000) / 0.9)
    assert_close(out["projectedAbsoluteToplineImpactDelta"], out["confidenceIntervalDelta"] * 1000)
    assert out["testUnits"] == 900 and out["controlUnits"] == 100
    se = np.sqrt(stats.sem(t) ** 2 + stats.sem(c) ** 2)
    mde = (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * se
    assert_close(out["reversePower"], float(100 * mde / abs(mc)))


def test_reverse_power_is_the_effect_detected_with_80_percent_power() -> None:
    v = 0.0025
    mde = minimum_detectable_effect(v, 0.05)
    assert mde is not None
    se = np.sqrt(v)
    # power of the two-sided level-0.05 z-test at the MDE (the far tail is ~1e-6)
    power = stats.norm.sf(stats.norm.ppf(0.975) - mde / se) + stats.norm.cdf(
        -stats.norm.ppf(0.975) - mde / se
    )
    assert power == pytest.approx(0.8, abs=1e-5)
    assert_close(stats.norm.sf(stats.norm.ppf(0.975) - mde / se), 0.8)
    assert reverse_power(v, 0.0, 0.05) is None
    assert minimum_detectable_effect(0.0, 0.05) is None


def test_topline_undefined_cases() -> None:
    t = topline_impact(1.0, 0.5, 0.0, 10, 10, 100.0)
    assert t.absolute == 10.0 and t.relative is None and t.projected_absolute is None
    assert t.reason is not None and "control mean is 0" in t.reason
    t = topline_impact(None, None, 2.0, 0, 0, 10.0)
    assert t.absolute is None and t.relative is None
