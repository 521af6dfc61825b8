# ruff: noqa: RUF003 - formulas keep their own notation (Greek letters, minus signs)
"""Bayesian posterior against scipy (conjugacy and numerical integration); SPRT decisions."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, optimize, stats

from expconsole.stats import (
    BayesianPrior,
    ResultOptions,
    SampleMeanStatistic,
    SprtSettings,
    bayesian_test,
    experiment_result,
    sprt_test,
)
from tests.unit.stats.reference import assert_close, generated_groups


@settings(max_examples=80, deadline=None, database=None)
@given(st.integers(0, 2**32 - 1), st.integers(20, 300), st.integers(20, 300))
def test_flat_prior_posterior_is_the_sampling_distribution(seed: int, n_t: int, n_c: int) -> None:
    t, c = generated_groups(seed, n_t, n_c, "normal")
    delta = float(np.mean(t) - np.mean(c))
    sd = math.sqrt(stats.sem(t) ** 2 + stats.sem(c) ** 2)
    out = experiment_result(
        SampleMeanStatistic.from_values(t), SampleMeanStatistic.from_values(c), ResultOptions(bayesian=True)
    ).to_dict()
    assert_close(out["posteriorMean"], delta, abs_tol=1e-14)
    assert_close(out["posteriorStdDev"], sd)
    assert_close(out["chanceToBeatControl"], float(stats.norm.cdf(delta / sd)))
    # E[max(−effect, 0)] = P(effect < 0)·E[−effect | effect < 0], with scipy's truncated normal
    below = stats.norm.cdf(-delta / sd)
    truncated_mean = stats.truncnorm.mean(-np.inf, -delta / sd, loc=delta, scale=sd)
    assert_close(out["expectedLoss"], float(below * -truncated_mean), abs_tol=1e-15)
    lo, hi = stats.norm.interval(0.95, loc=delta, scale=sd)
    assert_close(out["credibleInterval"]["lower"], float(lo), abs_tol=1e-12)
    assert_close(out["credibleInterval"]["upper"], float(hi), abs_tol=1e-12)


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.floats(-2.0, 2.0),
    st.floats(0.01, 1.0),
    st.floats(-1.0, 1.0),
    st.floats(0.05, 2.0),
    st.booleans(),
)
def test_informative_prior_matches_numerical_integration(
    delta: float, se: float, prior_mean: float, prior_sd: float, higher_is_better: bool
) -> None:
    res = bayesian_test(
        delta, se * se, BayesianPrior(prior_mean, prior_sd), higher_is_better=higher_is_better
    )

    # likelihood × prior, integrated numerically around its mode (found by optimisation)
    def log_density(e: float) -> float:  # normal log densities up to constants, which cancel
        return -0.5 * ((delta - e) / se) ** 2 - 0.5 * ((e - prior_mean) / prior_sd) ** 2

    lo, hi = min(delta, prior_mean), max(delta, prior_mean)
    mode = optimize.minimize_scalar(
        lambda e: -log_density(e), bounds=(lo - 1, hi + 1), method="bounded", options={"xatol": 1e-12}
    ).x
    peak = log_density(mode)
    width = 40 * min(se, prior_sd)
    a, b = mode - width, mode + width
    pts = [mode] + ([0.0] if a < 0 < b else [])

    def integral(f: Callable[[float], float]) -> float:
        return integrate.quad(
            lambda e: f(e) * math.exp(log_density(e) - peak),
            a,
            b,
            points=pts,
            limit=400,
            epsabs=1e-13,
            epsrel=1e-11,
        )[0]

    z = integral(lambda e: 1.0)
    sign = 1.0 if higher_is_better else -1.0
    assert_close(res.posterior_mean, integral(lambda e: e) / z, rel=1e-7, abs_tol=1e-9)
    assert_close(
        res.chance_to_beat_control, integral(lambda e: float(sign * e > 0)) / z, rel=1e-7, abs_tol=1e-9
    )
    assert_close(res.expected_loss, integral(lambda e: max(-sign * e, 0.0)) / z, rel=1e-7, abs_tol=1e-9)
    mean = integral(lambda e: e) / z
    assert_close(res.posterior_std_dev, math.sqrt(integral(lambda e: (e - mean) ** 2) / z), rel=1e-6)


def test_bayesian_undefined_and_invalid_prior() -> None:
    res = bayesian_test(0.1, 0.0)
    assert res.chance_to_beat_control is None and res.reason is not None
    assert bayesian_test(None, None).posterior_mean is None
    with pytest.raises(ValueError):
        BayesianPrior(0.0, 0.0)


def test_sprt_llr_boundaries_and_decisions() -> None:
    # V = 0.01 → se 0.1; δ = 0.2 → θ = 2; Δ = 0.3 → |z| = 3; LLR = 3·2 − 2 = 4
    res = sprt_test(0.3, 0.01, 10.0, 0.05, SprtSettings(mde=0.2, power=0.8))
    assert_close(res.llr, 4.0)
    assert_close(res.upper_boundary, math.log(0.8 / 0.05))
    assert_close(res.lower_boundary, math.log(0.2 / 0.95))
    assert res.decision == "accept_alternative"
    # Δ = 0 → LLR = −θ²/2 = −2 ≤ ln(0.2/0.95) ≈ −1.558
    assert sprt_test(0.0, 0.01, 10.0, 0.05, SprtSettings(mde=0.2)).decision == "accept_null"
    # Δ = 0.12 → LLR = 1.2·2 − 2 = 0.4: continue
    assert sprt_test(0.12, 0.01, 10.0, 0.05, SprtSettings(mde=0.2)).decision == "continue"
    # relative MDE: 2% of a control mean of 10 is 0.2 again
    rel = sprt_test(0.3, 0.01, 10.0, 0.05, SprtSettings(mde=0.02, relative=True))
    assert_close(rel.mde, 0.2)
    assert_close(rel.llr, 4.0)


def test_sprt_undefined_cases() -> None:
    assert (
        sprt_test(0.3, 0.01, 0.0, 0.05, SprtSettings(mde=0.02, relative=True)).reason == "control mean is 0"
    )
    assert sprt_test(0.3, 0.0, 1.0, 0.05, SprtSettings(mde=0.2)).llr is None
    assert sprt_test(0.3, 0.01, 1.0, 0.0, SprtSettings(mde=0.2)).decision is None
    with pytest.raises(ValueError):
        SprtSettings(mde=0.0)
