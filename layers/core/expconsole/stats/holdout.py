# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""Holdout figures: topline impact, its projection to the whole population, and reverse power.

Topline (docs/statistics.md, 'Holdouts: topline impact and reverse power'):
`absoluteToplineImpact = Δ·n_test`, the total change over the test units;
`relativeToplineImpact = 100·absoluteToplineImpact/(x̄_c·(n_t + n_c))`, that change as a share
of the metric's total over everyone observed. The `…Delta` companions are the same maps applied
to the interval half-width (the control mean and counts taken as fixed).

Projected (this project's definition): the holdout's pass percentage h is the share of the
population held out, so the test units are a (1 − h) share; projected figures are the topline
figures divided by (1 − h), the impact if the held-out share received the features too.

Reverse power: the minimum detectable effect at 80% power, two-sided level α, given the
observed var(Δ): `MDE = (Φ⁻¹(1 − α/2) + Φ⁻¹(power))·√V` (the usual approximation that ignores
the far tail), reported as a percentage of the control mean. Small values mean the holdout
could have seen small effects.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._numeric import divide, finite_or_none, norm_ppf

__all__ = ["REVERSE_POWER", "ToplineImpact", "minimum_detectable_effect", "reverse_power", "topline_impact"]

REVERSE_POWER = 0.8


@dataclass(frozen=True, slots=True)
class ToplineImpact:
    """Topline and projected impact with their interval half-widths; None where undefined."""

    absolute: float | None
    absolute_delta: float | None
    relative: float | None
    relative_delta: float | None
    projected_absolute: float | None
    projected_absolute_delta: float | None
    projected_relative: float | None
    projected_relative_delta: float | None
    reason: str | None = None


def _scale(value: float | None, factor: float | None) -> float | None:
    if value is None or factor is None:
        return None
    return finite_or_none(value * factor)


def topline_impact(
    delta: float | None,
    half_width: float | None,
    control_mean: float | None,
    n_test: int,
    n_control: int,
    pass_percentage: float | None,
) -> ToplineImpact:
    """Topline figures of a holdout comparison; `pass_percentage` is the held-out share in percent."""
    reasons: list[str] = []
    absolute = _scale(delta, float(n_test))
    absolute_delta = _scale(half_width, float(n_test))
    total = n_test + n_control
    rel_factor: float | None = None
    if control_mean is None or control_mean == 0 or total == 0:
        reasons.append("control mean is 0" if total else "no units")
    else:
        rel_factor = divide(100.0, control_mean * total)
    relative = _scale(absolute, rel_factor)
    relative_delta = _scale(absolute_delta, abs(rel_factor) if rel_factor is not None else None)
    projection: float | None = None
    if pass_percentage is None or not 0.0 <= pass_percentage < 100.0:
        reasons.append("no pass percentage below 100")
    else:
        projection = 1.0 / (1.0 - pass_percentage / 100.0)
    return ToplineImpact(
        absolute,
        absolute_delta,
        relative,
        relative_delta,
        _scale(absolute, projection),
        _scale(absolute_delta, projection),
        _scale(relative, projection),
        _scale(relative_delta, projection),
        "; ".join(reasons) or None,
    )


def minimum_detectable_effect(
    variance_of_delta: float | None, alpha: float, power: float = REVERSE_POWER
) -> float | None:
    """(z_{1−α/2} + z_power)·√V, the absolute effect detected with the given power; None if V undefined."""
    if variance_of_delta is None or not variance_of_delta > 0 or not 0.0 < alpha < 1.0:
        return None
    return finite_or_none((norm_ppf(1.0 - alpha / 2.0) + norm_ppf(power)) * math.sqrt(variance_of_delta))


def reverse_power(
    variance_of_delta: float | None, control_mean: float | None, alpha: float, power: float = REVERSE_POWER
) -> float | None:
    """The minimum detectable effect as a percentage of |control mean|; None when undefined."""
    mde = minimum_detectable_effect(variance_of_delta, alpha, power)
    if mde is None or control_mean is None:
        return None
    return divide(100.0 * mde, abs(control_mean))
