"""Sample ratio mismatch: chi-squared test of unit counts against the configured group sizes.

Status: `fail` when p < 0.001 and some group's share is off its configured share by at least
0.1 percentage point; `warn` when p < 0.01 (including a p < 0.001 whose deviation is below 0.1
point, too small to act on but worth a look); otherwise `pass`.

Pure Python: the chi-squared survival function is mpmath's regularised upper incomplete gamma
function, so the pulse function (which writes the health checks) runs without numpy or scipy and
fits Lambda's size limit; `expconsole.stats` re-exports this module for the results side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "SRM_FAIL_P",
    "SRM_MIN_DEVIATION_PP",
    "SRM_WARN_P",
    "SrmResult",
    "SrmStatus",
    "chi2_sf",
    "srm_check",
]

SRM_WARN_P = 0.01
SRM_FAIL_P = 0.001
SRM_MIN_DEVIATION_PP = 0.1

SrmStatus = Literal["pass", "warn", "fail"]


@dataclass(frozen=True, slots=True)
class SrmResult:
    """χ², its p-value, the largest deviation of a group's share in percentage points, and the status."""

    chi_squared: float | None
    p_value: float | None
    max_deviation_pp: float | None
    status: SrmStatus
    reason: str | None = None


def _finite_or_none(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def chi2_sf(dof: float, x: float) -> float:
    """P(χ²_dof > x): the regularised upper incomplete gamma function Q(dof/2, x/2)."""
    import mpmath  # imported on first use: only load_pulse's health check needs it

    if x <= 0:
        return 1.0
    return float(mpmath.gammainc(dof / 2.0, x / 2.0, mpmath.inf, regularized=True))


def srm_check(observed: Sequence[int], expected_sizes: Sequence[float]) -> SrmResult:
    """Test observed unit counts against configured sizes (any scale: percentages, weights)."""
    if len(observed) != len(expected_sizes):
        raise ValueError("observed and expected_sizes must have the same length")
    if any(o < 0 for o in observed) or any(not w >= 0 for w in expected_sizes):
        raise ValueError("counts and sizes must be non-negative")
    total = sum(observed)
    weight = float(sum(expected_sizes))
    if total == 0 or weight == 0:
        return SrmResult(None, None, None, "pass", "no units" if total == 0 else "no configured group sizes")
    shares = [w / weight for w in expected_sizes]
    deviation = max(abs(o / total - s) for o, s in zip(observed, shares, strict=True)) * 100.0
    if any(o > 0 and s == 0 for o, s in zip(observed, shares, strict=True)):
        return SrmResult(None, None, deviation, "fail", "units in a group configured with size 0")
    cells = [(o, total * s) for o, s in zip(observed, shares, strict=True) if s > 0]
    if len(cells) < 2:
        return SrmResult(None, None, deviation, "pass", "fewer than 2 groups with a configured size")
    chi2 = sum((o - e) ** 2 / e for o, e in cells)
    p = _finite_or_none(chi2_sf(len(cells) - 1, chi2))
    status: SrmStatus = "pass"
    if p is not None and p < SRM_FAIL_P and deviation >= SRM_MIN_DEVIATION_PP - 1e-12:
        status = "fail"
    elif p is not None and p < SRM_WARN_P:
        status = "warn"
    return SrmResult(_finite_or_none(chi2), p, deviation, status)
