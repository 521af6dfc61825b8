# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""Independent reference computations from raw unit values (numpy, scipy, statsmodels only).

Nothing here imports `expconsole.stats`: expectations must not be recomputed with the code
under test.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from scipy import stats

REL = 1e-9


def close(actual: float | None, expected: float, *, rel: float = REL, abs_tol: float = 0.0) -> bool:
    """Relative agreement to `rel`, with an absolute floor for values that should be near zero."""
    return actual is not None and math.isclose(actual, expected, rel_tol=rel, abs_tol=abs_tol)


def assert_close(actual: float | None, expected: float, *, rel: float = REL, abs_tol: float = 0.0) -> None:
    assert close(actual, expected, rel=rel, abs_tol=abs_tol), f"{actual!r} != {expected!r}"


@dataclass(frozen=True)
class Welch:
    """The fixed-horizon figures (docs/statistics.md, 'Fixed-horizon test') from raw values."""

    delta: float
    variance: float
    dof: float
    uses_t: bool
    crit: float
    p_value: float
    half_width: float
    se_test: float
    se_control: float


def welch_reference(test: np.ndarray, control: np.ndarray, alpha: float) -> Welch:
    """Welch's test as docs/statistics.md defines it: scipy's Welch t when ν < 100, else the normal."""
    test, control = np.asarray(test, float), np.asarray(control, float)
    se_t, se_c = stats.sem(test), stats.sem(control)
    v = se_t**2 + se_c**2
    dof = v**2 / (se_t**4 / (len(test) - 1) + se_c**4 / (len(control) - 1))
    delta = float(np.mean(test) - np.mean(control))
    if dof < 100:
        with warnings.catch_warnings():
            # scipy warns when one group is constant; its answer is still the reference
            warnings.simplefilter("ignore", RuntimeWarning)
            res = stats.ttest_ind(test, control, equal_var=False)
        p = float(res.pvalue)
        crit = float(stats.t.ppf(1 - alpha / 2, dof))
        # the statistic scipy used must be the same Δ/√V
        assert math.isclose(float(res.statistic), delta / math.sqrt(v), rel_tol=1e-9, abs_tol=1e-12)
        uses_t = True
    else:
        p = float(2 * stats.norm.sf(abs(delta) / math.sqrt(v)))
        crit = float(stats.norm.ppf(1 - alpha / 2))
        uses_t = False
    return Welch(delta, v, dof, uses_t, crit, p, crit * math.sqrt(v), float(se_t), float(se_c))


def delta_method_percent_half(test: np.ndarray, control: np.ndarray, crit: float) -> float:
    """The percent half-width of docs/statistics.md, 100·crit·√(s_t²/(n_t·x̄_c²) + x̄_t²·s_c²/(n_c·x̄_c⁴))."""
    mt, mc = np.mean(test), np.mean(control)
    vt, vc = np.var(test, ddof=1), np.var(control, ddof=1)
    return float(100 * crit * np.sqrt(vt / (len(test) * mc**2) + mt**2 * vc / (len(control) * mc**4)))


def fieller_roots(mt: float, mc: float, var_t: float, var_c: float, crit: float) -> tuple[float, float]:
    """Fieller's bounds for ρ = μt/μc as the roots of (mt − ρ·mc)² = crit²·(var_t + ρ²·var_c)."""
    coeffs = [mc**2 - crit**2 * var_c, -2 * mt * mc, mt**2 - crit**2 * var_t]
    roots = np.sort(np.roots(coeffs).real)
    return float(roots[0]), float(roots[1])


def linearised(m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Per-unit linearised ratio R + (m − R·d)/d̄: mean R, sample variance = delta-method variance."""
    m, d = np.asarray(m, float), np.asarray(d, float)
    r = m.sum() / d.sum()
    return r + (m - r * d) / d.mean()


def grid_floats(lo: int = -(10**6), hi: int = 10**6) -> st.SearchStrategy[float]:
    """Decimal-like values (two decimals), as metric values are."""
    return st.integers(lo, hi).map(lambda k: k / 100)


def unit_values(min_size: int = 2, max_size: int = 40) -> st.SearchStrategy[list[float]]:
    """Raw values of one group: sums, counts with many zeros, or 0/1 flags."""
    counts = st.integers(0, 30).map(float)
    flags = st.integers(0, 1).map(float)
    return st.one_of(
        st.lists(grid_floats(), min_size=min_size, max_size=max_size),
        st.lists(counts, min_size=min_size, max_size=max_size),
        st.lists(flags, min_size=min_size, max_size=max_size),
    )


def generated_groups(seed: int, n_test: int, n_control: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Larger raw groups from a seed: normal, skewed (lognormal) or count (Poisson) values."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        return rng.normal(10.0, 3.0, n_test), rng.normal(9.7, 2.0, n_control)
    if kind == "lognormal":
        return rng.lognormal(1.0, 1.0, n_test), rng.lognormal(0.9, 1.1, n_control)
    return rng.poisson(2.0, n_test).astype(float), rng.poisson(1.8, n_control).astype(float)
