# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""Sequential testing (mSPRT): always-valid intervals and p-values before the planned end.

The formulas (docs/statistics.md, 'Sequential testing (mSPRT)'):

    τ  = z²·(s_t² + s_c²)/(n_t + n_c)                 (s² per-unit variances)
    Z* = √( ((V+τ)/τ)·(−2·ln(α/2) − ln(V/(V+τ))) )
    interval Δ ± Z*·√V;  p = 2·(1 − Φ(|z|/σ)),  σ = Z*/(√2·erfinv(1−α)) = Z*/z

z is the normal critical value Φ⁻¹(1 − α/2) = √2·erfinv(1−α) even where the fixed-horizon
test uses Welch's t: the mixture likelihood ratio is a normal-theory construction. The p-value
is below α exactly when the interval excludes 0. After the planned end the caller reports the
fixed-horizon figures (`is_sequential_period`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._numeric import finite_or_none, norm_cdf, norm_ppf
from .frequentist import PercentInterval, PercentMethod, percent_interval
from .moments import GroupSummary

__all__ = ["SequentialResult", "is_sequential_period", "msprt_critical", "sequential_test"]


def is_sequential_period(sequential: bool, elapsed_fraction: float | None) -> bool:
    """Whether mSPRT figures apply: sequential testing on and the planned end not reached.

    `elapsed_fraction` is the elapsed share of the planned duration; None means unknown (no
    planned end), which keeps the sequential figures.
    """
    return sequential and (elapsed_fraction is None or elapsed_fraction < 1.0)


def msprt_critical(alpha: float, variance_of_delta: float, tau: float) -> float | None:
    """Z*, the always-valid critical value replacing the fixed one; None when V or τ is not positive."""
    if not (variance_of_delta > 0 and tau > 0 and math.isfinite(variance_of_delta) and math.isfinite(tau)):
        return None
    total = variance_of_delta + tau
    if not math.isfinite(total):
        return None
    # ln(V/(V+τ)) as a difference of logs: V/(V+τ) may underflow to 0 when V ≪ τ
    inner = -2.0 * math.log(alpha / 2.0) - (math.log(variance_of_delta) - math.log(total))
    return finite_or_none(math.sqrt(total / tau * inner))


@dataclass(frozen=True, slots=True)
class SequentialResult:
    """mSPRT interval and p-value; None where undefined."""

    z_star: float | None
    half_width: float | None
    lower: float | None
    upper: float | None
    p_value: float | None
    percent: PercentInterval
    reason: str | None = None


def sequential_test(
    test: GroupSummary,
    control: GroupSummary,
    alpha: float,
    *,
    reference_mean: float | None = None,
    percent_method: PercentMethod = "delta",
) -> SequentialResult:
    """The mSPRT figures at level α for two group summaries."""
    if not 0.0 <= alpha < 1.0:
        raise ValueError("alpha must be in [0, 1)")
    reference = control.mean if reference_mean is None else reference_mean
    empty = PercentInterval(None, None, None, None, None)
    if alpha == 0.0:
        return SequentialResult(None, None, None, None, None, empty, "adjusted alpha is 0: no interval")
    if test.mean is None or control.mean is None:
        return SequentialResult(None, None, None, None, None, empty, test.reason or control.reason)
    delta = finite_or_none(test.mean - control.mean)
    vt, vc = test.variance_of_mean, control.variance_of_mean
    if delta is None or vt is None or vc is None or test.variance is None or control.variance is None:
        reason = (control.reason if vc is None else test.reason) or "delta is not finite"
        return SequentialResult(
            None, None, None, None, None, percent_interval(delta, None, None, reference, None), reason
        )
    v = vt + vc
    z_crit = norm_ppf(1.0 - alpha / 2.0)
    tau = finite_or_none(z_crit * z_crit * (test.variance + control.variance) / (test.n + control.n)) or 0.0
    z_star = msprt_critical(alpha, v, tau)
    if z_star is None:
        pct = percent_interval(delta, None, None, reference, None)
        return SequentialResult(None, None, None, None, None, pct, "zero variance in both groups")
    se = math.sqrt(v)
    half = finite_or_none(z_star * se)
    z = finite_or_none(delta / se)
    if half is None or z is None:
        pct = percent_interval(delta, None, None, reference, None)
        return SequentialResult(None, None, None, None, None, pct, "variance out of range")
    sigma = z_star / z_crit
    p = min(1.0, 2.0 * norm_cdf(-abs(z) / sigma))
    pct = percent_interval(delta, vt, vc, reference, z_star, percent_method)
    return SequentialResult(z_star, half, delta - half, delta + half, p, pct, pct.reason)
