# ruff: noqa: RUF001, RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""Fixed-horizon two-sample test: Welch z/t, absolute and percent intervals.

The formulas: docs/statistics.md, 'Fixed-horizon test'.

The percent change divides the delta by a reference mean, the control mean unless the caller
passes another (CUPED keeps the raw control mean as denominator while the delta and the
variances are adjusted). Its delta-method interval treats the test mean as `reference + Δ`,
which is x̄_t without CUPED, so the formula is that of docs/statistics.md, 'Percent change and
its interval'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ._numeric import divide, finite_or_none, norm_cdf, norm_ppf, t_cdf, t_ppf
from .moments import GroupSummary

__all__ = [
    "WELCH_T_BELOW_DOF",
    "FrequentistResult",
    "PercentInterval",
    "PercentMethod",
    "critical_value",
    "fieller_interval",
    "frequentist_test",
    "percent_interval",
    "welch_dof",
]

WELCH_T_BELOW_DOF = 100.0
"""Student's t with Welch's ν replaces the normal when ν is below this."""

PercentMethod = Literal["delta", "fieller"]

ZERO_VARIANCE = "zero variance in both groups"
ZERO_CONTROL_MEAN = "control mean is 0"
FIELLER_UNBOUNDED = "Fieller interval is unbounded (g >= 1)"
ZERO_ALPHA = "adjusted alpha is 0: no interval"


def welch_dof(var_mean_test: float, var_mean_control: float, n_test: int, n_control: int) -> float | None:
    """Welch–Satterthwaite ν from the variances of the two means; None when undefined."""
    if n_test < 2 or n_control < 2:
        return None
    v = var_mean_test + var_mean_control
    if not (v > 0 and math.isfinite(v)):
        return None
    # nu = V^2 / sum(v_g^2/(n_g - 1)), written with the shares v_g/V so nothing overflows or underflows
    a, b = var_mean_test / v, var_mean_control / v
    return divide(1.0, a * a / (n_test - 1) + b * b / (n_control - 1))


def critical_value(alpha: float, dof: float | None = None) -> float:
    """Two-sided critical value: Φ⁻¹(1 − α/2), or Student's t with `dof` when ν < 100."""
    if dof is not None and dof < WELCH_T_BELOW_DOF:
        return t_ppf(dof, 1.0 - alpha / 2.0)
    return norm_ppf(1.0 - alpha / 2.0)


def _two_sided_p(z: float, dof: float | None) -> float:
    if dof is not None and dof < WELCH_T_BELOW_DOF:
        return min(1.0, 2.0 * t_cdf(dof, -abs(z)))
    return min(1.0, 2.0 * norm_cdf(-abs(z)))


@dataclass(frozen=True, slots=True)
class PercentInterval:
    """Percent change and its interval; None where undefined, with the reason."""

    percent_change: float | None
    half_width: float | None
    lower: float | None
    upper: float | None
    reason: str | None = None


def percent_interval(
    delta: float | None,
    var_mean_test: float | None,
    var_mean_control: float | None,
    reference: float | None,
    crit: float | None,
    method: PercentMethod = "delta",
) -> PercentInterval:
    """100·Δ/reference with a delta-method (symmetric) or Fieller (exact, asymmetric) interval.

    For Fieller the half-width is half the interval's width; g ≥ 1 leaves only the point estimate.
    """
    if delta is None:
        return PercentInterval(None, None, None, None, None)
    if reference is None or reference == 0:
        return PercentInterval(None, None, None, None, ZERO_CONTROL_MEAN)
    ratio = divide(delta, reference)
    pct = finite_or_none(100.0 * ratio) if ratio is not None else None
    if ratio is None or pct is None or crit is None or var_mean_test is None or var_mean_control is None:
        return PercentInterval(
            pct, None, None, None, None if pct is not None else "percent change out of range"
        )
    treated_ratio = 1.0 + ratio  # (reference + Δ)/reference
    if method == "delta":
        rel_t = divide(var_mean_test, reference * reference)
        rel_c = divide(var_mean_control, reference * reference)
        if rel_t is None or rel_c is None:
            return PercentInterval(pct, None, None, None, "percent interval out of range")
        half = finite_or_none(100.0 * crit * math.sqrt(rel_t + treated_ratio * treated_ratio * rel_c))
        if half is None:
            return PercentInterval(pct, None, None, None, "percent interval out of range")
        return PercentInterval(pct, half, pct - half, pct + half)
    treated = reference + delta
    bounds = fieller_interval(treated, reference, var_mean_test, var_mean_control, crit)
    if bounds is None:
        return PercentInterval(pct, None, None, None, FIELLER_UNBOUNDED)
    lower, upper = 100.0 * (bounds[0] - 1.0), 100.0 * (bounds[1] - 1.0)
    return PercentInterval(pct, (upper - lower) / 2.0, lower, upper)


def fieller_interval(
    mean_test: float, mean_control: float, var_mean_test: float, var_mean_control: float, crit: float
) -> tuple[float, float] | None:
    """Fieller's interval for x̄_t/x̄_c with independent means; None when unbounded (g ≥ 1).

    Written with the variances of the means, s²/n (docs/statistics.md, 'Percent change and its
    interval').
    """
    g = divide(crit * crit * var_mean_control, mean_control * mean_control)
    r = divide(mean_test, mean_control)
    if g is None or r is None or not g < 1.0:
        return None
    spread = finite_or_none(r * r * var_mean_control + (1.0 - g) * var_mean_test)
    scale = divide(crit, mean_control)
    if spread is None or scale is None:
        return None
    root = math.sqrt(max(spread, 0.0))
    a = divide(r - scale * root, 1.0 - g)
    b = divide(r + scale * root, 1.0 - g)
    if a is None or b is None:
        return None
    return min(a, b), max(a, b)


@dataclass(frozen=True, slots=True)
class FrequentistResult:
    """Every figure of the fixed-horizon test; None where undefined and `reason` saying why."""

    delta: float | None
    variance: float | None
    dof: float | None
    critical: float | None
    statistic: float | None
    p_value: float | None
    half_width: float | None
    lower: float | None
    upper: float | None
    percent: PercentInterval
    reason: str | None = None

    @property
    def uses_t(self) -> bool:
        """Whether Student's t (ν < 100) replaced the normal."""
        return self.dof is not None and self.dof < WELCH_T_BELOW_DOF


def frequentist_test(
    test: GroupSummary,
    control: GroupSummary,
    alpha: float,
    *,
    reference_mean: float | None = None,
    percent_method: PercentMethod = "delta",
) -> FrequentistResult:
    """Welch's two-sample test at level α (two-sided) on two group summaries.

    `reference_mean` is the percent-change denominator (default: the control mean). α = 0 (a
    Bonferroni share of nothing) leaves the intervals undefined but not the p-value.
    """
    if not 0.0 <= alpha < 1.0:
        raise ValueError("alpha must be in [0, 1)")
    reference = control.mean if reference_mean is None else reference_mean
    if test.mean is None or control.mean is None:
        reason = control.reason if control.mean is None else test.reason
        return _undefined(None, reason, PercentInterval(None, None, None, None, None))
    delta = finite_or_none(test.mean - control.mean)
    vt, vc = test.variance_of_mean, control.variance_of_mean
    if delta is None or vt is None or vc is None:
        reason = (control.reason if vc is None else test.reason) or "delta is not finite"
        return _undefined(delta, reason, percent_interval(delta, None, None, reference, None))
    v = vt + vc
    if not v > 0:
        return _undefined(delta, ZERO_VARIANCE, percent_interval(delta, None, None, reference, None))
    if not math.isfinite(v):
        return _undefined(
            delta, "variance out of range", percent_interval(delta, None, None, reference, None)
        )
    dof = welch_dof(vt, vc, test.n, control.n)
    se = math.sqrt(v)
    z = finite_or_none(delta / se)
    if z is None:
        return _undefined(
            delta, "variance out of range", percent_interval(delta, None, None, reference, None)
        )
    p_value = _two_sided_p(z, dof)
    if alpha == 0.0:
        pct = percent_interval(delta, None, None, reference, None)
        return FrequentistResult(delta, v, dof, None, z, p_value, None, None, None, pct, ZERO_ALPHA)
    crit = critical_value(alpha, dof)
    half = finite_or_none(crit * se)
    if half is None:
        pct = percent_interval(delta, None, None, reference, None)
        return FrequentistResult(
            delta, v, dof, crit, z, p_value, None, None, None, pct, "interval out of range"
        )
    pct = percent_interval(delta, vt, vc, reference, crit, percent_method)
    return FrequentistResult(
        delta=delta,
        variance=v,
        dof=dof,
        critical=crit,
        statistic=z,
        p_value=p_value,
        half_width=half,
        lower=delta - half,
        upper=delta + half,
        percent=pct,
        reason=pct.reason,
    )


def _undefined(delta: float | None, reason: str | None, pct: PercentInterval) -> FrequentistResult:
    return FrequentistResult(delta, None, None, None, None, None, None, None, None, pct, reason)
