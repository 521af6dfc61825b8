"""The sample ratio check's p-value without scipy: mpmath's chi-squared survival function equals
scipy's over the degrees of freedom and statistics an SRM check meets (far tails included)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from expconsole.srm import chi2_sf, srm_check


@pytest.mark.parametrize("dof", [1, 2, 3, 4, 5, 7, 9, 19, 0.5, 2.5])
def test_chi2_survival_equals_scipy(dof: float) -> None:
    for x in [0.0, 1e-12, 1e-6, 0.01, 0.3, 1.0, 2.5, dof, 7.84, 16.0, 30.0, 100.0, 700.0, 1500.0, 1e4]:
        want = float(stats.chi2.sf(x, dof))
        got = chi2_sf(dof, x)
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-300), (dof, x, got, want)


def test_chi2_survival_at_the_ends() -> None:
    assert chi2_sf(2, 0.0) == 1.0
    assert chi2_sf(2, math.inf) == 0.0
    assert chi2_sf(1, 5000.0) == pytest.approx(float(stats.chi2.sf(5000.0, 1)), rel=1e-12)


def test_srm_p_value_equals_scipy_chisquare_on_skewed_counts() -> None:
    for observed, sizes in [([5140, 4860], [50, 50]), ([3400, 3300, 3500], [34, 33, 33]), ([90, 10], [1, 1])]:
        total = sum(observed)
        expected = [total * s / sum(sizes) for s in sizes]
        want = float(stats.chisquare(observed, expected).pvalue)
        got = srm_check(observed, sizes).p_value
        assert got is not None and math.isclose(got, want, rel_tol=1e-12), (observed, got, want)
