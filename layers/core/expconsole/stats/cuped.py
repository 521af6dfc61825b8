# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""CUPED: regression adjustment on the pre-exposure value of the same metric.

θ is the pooled within-group slope

    θ = (C_xp,t + C_xp,c) / (C_pp,t + C_pp,c),   C = centred co-moment within a group,

that is the coefficient of p in the least-squares fit `x ~ 1 + treatment + p` over both groups
(ANCOVA). Pooling within groups keeps a treatment effect on x out of θ. Each unit's value
becomes `x − θ·(p − p̄)` with p̄ the mean over both groups, so the adjusted delta is
`Δx − θ·Δp` (the fit's treatment coefficient), and each group's adjusted variance is
`s_x² − 2θ·s_xp + θ²·s_p²` with its own moments.

Ratio metrics are adjusted through their linearised ratios (see
`CupedRatioStatistic.linearised`), the pre-period covariate being the pre-period ratio.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._numeric import divide, finite_or_none
from .moments import OUT_OF_RANGE, CupedRatioStatistic, CupedStatistic, GroupSummary

__all__ = [
    "CUPED_MIN_PRE_SHARE",
    "CUPED_MIN_UNITS",
    "CupedResult",
    "adjusted_summary",
    "cuped_adjust",
    "pooled_theta",
]

CUPED_MIN_UNITS = 100
"""CUPED needs more than this many units over both groups."""
CUPED_MIN_PRE_SHARE = 0.05
"""... and more than this share of them with a non-zero pre-period value."""

APPLIED = "applied"


@dataclass(frozen=True, slots=True)
class CupedResult:
    """The summaries to test (adjusted when `applied`), θ, and why CUPED was or was not applied."""

    applied: bool
    reason: str
    theta: float | None
    test: GroupSummary
    control: GroupSummary
    variance_unadjusted: float | None = None
    variance_adjusted: float | None = None


def pooled_theta(test: CupedStatistic, control: CupedStatistic) -> float | None:
    """Pooled within-group slope of x on p; None when p is constant within both groups."""
    denom = test.p_m2 + control.p_m2
    if not denom > 0:
        return None
    return divide(test.xp_comoment + control.xp_comoment, denom)


def adjusted_summary(stat: CupedStatistic, theta: float, pooled_pre_mean: float) -> GroupSummary:
    """The group's summary of x − θ·(p − p̄)."""
    if stat.n == 0:
        return stat.summary()
    mean = finite_or_none(stat.x_mean - theta * (stat.p_mean - pooled_pre_mean))
    if mean is None:
        return GroupSummary(stat.n, None, None, OUT_OF_RANGE)
    if stat.n < 2:
        return GroupSummary.of(stat.n, mean, None)
    m2 = finite_or_none(stat.x_m2 - 2.0 * theta * stat.xp_comoment + theta * theta * stat.p_m2)
    if m2 is None:
        return GroupSummary(stat.n, mean, None, OUT_OF_RANGE)
    return GroupSummary.of(stat.n, mean, max(m2, 0.0) / (stat.n - 1))


def _var_of_delta(a: GroupSummary, b: GroupSummary) -> float | None:
    va, vb = a.variance_of_mean, b.variance_of_mean
    return None if va is None or vb is None else va + vb


def cuped_adjust(
    test: CupedStatistic | CupedRatioStatistic, control: CupedStatistic | CupedRatioStatistic
) -> CupedResult:
    """Apply CUPED when eligible (> 100 units, > 5% with pre data, lower var(Δ)); else the raw summaries."""
    raw_t, raw_c = test.summary(), control.summary()
    if isinstance(test, CupedRatioStatistic) or isinstance(control, CupedRatioStatistic):
        if not (isinstance(test, CupedRatioStatistic) and isinstance(control, CupedRatioStatistic)):
            raise TypeError("CUPED needs two statistics of the same kind")
        lin_t, lin_c = test.linearised(), control.linearised()
        if lin_t is None or lin_c is None:
            return CupedResult(
                False, "a ratio or pre-period ratio has a zero denominator", None, raw_t, raw_c
            )
        t, c = lin_t, lin_c
    else:
        t, c = test, control
    v_raw = _var_of_delta(raw_t, raw_c)
    n = t.n + c.n
    if n <= CUPED_MIN_UNITS:
        return CupedResult(False, f"not more than {CUPED_MIN_UNITS} units", None, raw_t, raw_c, v_raw)
    nonzero = t.pre_nonzero + c.pre_nonzero
    if nonzero == 0:
        return CupedResult(False, "no pre-exposure data", None, raw_t, raw_c, v_raw)
    if not nonzero > CUPED_MIN_PRE_SHARE * n:
        return CupedResult(
            False, "not more than 5% of units have pre-exposure data", None, raw_t, raw_c, v_raw
        )
    theta = pooled_theta(t, c)
    if theta is None:
        return CupedResult(False, "pre-exposure values are constant within groups", None, raw_t, raw_c, v_raw)
    pooled_pre_mean = finite_or_none((t.n * t.p_mean + c.n * c.p_mean) / n)
    if pooled_pre_mean is None:
        return CupedResult(False, "pre-exposure values out of range", None, raw_t, raw_c, v_raw)
    adj_t = adjusted_summary(t, theta, pooled_pre_mean)
    adj_c = adjusted_summary(c, theta, pooled_pre_mean)
    v_adj = _var_of_delta(adj_t, adj_c)
    if v_raw is None or v_adj is None:
        return CupedResult(False, "variance undefined in a group", theta, raw_t, raw_c, v_raw, v_adj)
    if not v_adj < v_raw:
        return CupedResult(False, "adjustment does not lower the variance", theta, raw_t, raw_c, v_raw, v_adj)
    return CupedResult(True, APPLIED, theta, adj_t, adj_c, v_raw, v_adj)
