# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""SPRT decisions per metric (analyticsType `sprt`), as docs/statistics.md, 'SPRT' writes them.

With MDE δ (absolute, or relative × control mean) and θ = |δ|/√V:
LLR = |z|·θ − θ²/2; accept the alternative when LLR ≥ ln((1−β)/α), the null when
LLR ≤ ln(β/(1−α)), otherwise continue. β = 1 − power, the power being the experiment's
`defaultSPRTPowerParam`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ._numeric import divide, finite_or_none

__all__ = ["SprtDecision", "SprtResult", "SprtSettings", "sprt_test"]

SprtDecision = Literal["accept_alternative", "accept_null", "continue"]


@dataclass(frozen=True, slots=True)
class SprtSettings:
    """MDE (absolute, or a fraction of the control mean when `relative`) and the target power."""

    mde: float
    relative: bool = False
    power: float = 0.8

    def __post_init__(self) -> None:
        if not 0.0 < self.power < 1.0:
            raise ValueError("SPRT power must be strictly between 0 and 1")
        if not (math.isfinite(self.mde) and self.mde != 0):
            raise ValueError("SPRT MDE must be a non-zero number")


@dataclass(frozen=True, slots=True)
class SprtResult:
    """The log-likelihood ratio, both boundaries and the decision; None where undefined."""

    llr: float | None
    upper_boundary: float | None
    lower_boundary: float | None
    mde: float | None
    decision: SprtDecision | None
    reason: str | None = None


def sprt_test(
    delta: float | None,
    variance_of_delta: float | None,
    control_mean: float | None,
    alpha: float,
    settings: SprtSettings,
) -> SprtResult:
    """The SPRT decision for one metric at level α."""
    if not 0.0 < alpha < 1.0:
        return SprtResult(None, None, None, None, None, "alpha must be strictly between 0 and 1")
    beta = 1.0 - settings.power
    upper = math.log((1.0 - beta) / alpha)
    lower = math.log(beta / (1.0 - alpha))
    if settings.relative:
        if control_mean is None or control_mean == 0:
            return SprtResult(None, upper, lower, None, None, "control mean is 0")
        relative_mde = finite_or_none(abs(settings.mde * control_mean))
        if relative_mde is None:
            return SprtResult(None, upper, lower, None, None, "MDE out of range")
        mde = relative_mde
    else:
        mde = abs(settings.mde)
    if delta is None or variance_of_delta is None or not variance_of_delta > 0:
        return SprtResult(None, upper, lower, mde, None, "variance of the delta is undefined or 0")
    se = math.sqrt(variance_of_delta)
    theta, z = divide(mde, se), divide(delta, se)
    if theta is None or z is None:
        return SprtResult(None, upper, lower, mde, None, "log-likelihood ratio out of range")
    llr = finite_or_none(abs(z) * theta - theta * theta / 2.0)
    if llr is None:
        return SprtResult(None, upper, lower, mde, None, "log-likelihood ratio out of range")
    decision: SprtDecision = "continue"
    if llr >= upper:
        decision = "accept_alternative"
    elif llr <= lower:
        decision = "accept_null"
    return SprtResult(llr, upper, lower, mde, decision)
