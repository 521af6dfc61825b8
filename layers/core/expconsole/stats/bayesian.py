# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""Bayesian read-out of the effect Δ (absolute, in metric units) with a normal prior.

With the likelihood Δ̂ ~ N(Δ, V): posterior precision 1/σ² = 1/σ_prior² + 1/V and mean
(μ_prior/σ_prior² + Δ̂/V)·σ²; a flat prior (no prior standard deviation) leaves N(Δ̂, V).
Chance to beat control is P(effect > 0) = Φ(mean/σ) and the expected loss of shipping is
E[max(−effect, 0)] = σ·φ(mean/σ) − mean·Φ(−mean/σ); for metrics where lower is better the
sign of the effect is flipped for both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._numeric import divide, finite_or_none, norm_cdf, norm_ppf

__all__ = ["BayesianPrior", "BayesianResult", "bayesian_test"]

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True, slots=True)
class BayesianPrior:
    """Normal prior on the absolute effect; `std_dev=None` is the flat (improper) prior."""

    mean: float = 0.0
    std_dev: float | None = None

    def __post_init__(self) -> None:
        if self.std_dev is not None and not (self.std_dev > 0 and math.isfinite(self.std_dev)):
            raise ValueError("priorStdDev must be positive and finite (omit it for a flat prior)")
        if not math.isfinite(self.mean):
            raise ValueError("priorMean must be finite")


@dataclass(frozen=True, slots=True)
class BayesianResult:
    """Posterior of the effect and the decision figures derived from it."""

    posterior_mean: float | None
    posterior_std_dev: float | None
    chance_to_beat_control: float | None
    expected_loss: float | None
    credible_lower: float | None
    credible_upper: float | None
    reason: str | None = None


def bayesian_test(
    delta: float | None,
    variance_of_delta: float | None,
    prior: BayesianPrior | None = None,
    *,
    credibility: float = 0.95,
    higher_is_better: bool = True,
) -> BayesianResult:
    """Posterior of the effect given Δ̂ and var(Δ̂); undefined figures None with a reason."""
    prior = prior or BayesianPrior()
    if delta is None or variance_of_delta is None or not variance_of_delta > 0:
        return BayesianResult(None, None, None, None, None, None, "variance of the delta is undefined or 0")
    if prior.std_dev is None:
        mean, var = delta, variance_of_delta
    else:
        # weights of prior and data, w_prior + w_data = 1, computed without forming 1/V
        prior_var = prior.std_dev * prior.std_dev
        w_data = prior_var / (prior_var + variance_of_delta)
        var = w_data * variance_of_delta
        mean = (1.0 - w_data) * prior.mean + w_data * delta
    sd = math.sqrt(var)
    gain = mean if higher_is_better else -mean
    ratio = divide(gain, sd)
    if ratio is None:
        return BayesianResult(None, None, None, None, None, None, "posterior out of range")
    chance = norm_cdf(ratio)
    loss = sd * _INV_SQRT_2PI * math.exp(-0.5 * ratio * ratio) - gain * norm_cdf(-ratio)
    q = norm_ppf(0.5 + credibility / 2.0)
    return BayesianResult(
        finite_or_none(mean),
        finite_or_none(sd),
        finite_or_none(chance),
        finite_or_none(max(loss, 0.0)),
        finite_or_none(mean - q * sd),
        finite_or_none(mean + q * sd),
    )
