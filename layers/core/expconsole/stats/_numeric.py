"""Scalar distribution functions and guards shared by the tests.

`scipy.special` ufuncs on Python floats cost well under two microseconds, where building a
`scipy.stats` distribution object costs tens; the scorecard computes hundreds of entries per
request, so only these are used in the hot path.
"""

from __future__ import annotations

import math

from scipy import special

__all__ = [
    "divide",
    "finite_or_none",
    "norm_cdf",
    "norm_ppf",
    "t_cdf",
    "t_ppf",
]


def norm_cdf(x: float) -> float:
    """Φ(x), accurate in both tails."""
    return float(special.ndtr(x))


def norm_ppf(q: float) -> float:
    """Φ⁻¹(q)."""
    return float(special.ndtri(q))


def t_cdf(dof: float, x: float) -> float:
    """Student's t distribution function with (possibly fractional) degrees of freedom."""
    return float(special.stdtr(dof, x))


def t_ppf(dof: float, q: float) -> float:
    """Student's t quantile with (possibly fractional) degrees of freedom."""
    return float(special.stdtrit(dof, q))


def finite_or_none(value: float | None) -> float | None:
    """The value as a plain float, or None when it is missing, NaN or infinite (results never carry those)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def divide(numerator: float | None, denominator: float | None) -> float | None:
    """numerator/denominator as a finite float, or None (zero or underflowed denominator, overflow, NaN)."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return finite_or_none(numerator / denominator)
