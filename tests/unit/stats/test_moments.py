# ruff: noqa: RUF003 - formulas keep their own notation (Greek letters, minus signs)
"""Sufficient statistics: raw values, sums, stable merging and the undefined cases."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expconsole.stats import (
    CupedRatioStatistic,
    CupedStatistic,
    Moments,
    RatioStatistic,
    SampleMeanStatistic,
    merge,
    merge_all,
)
from tests.unit.stats.reference import assert_close, grid_floats, unit_values


def _scale(x: np.ndarray) -> float:
    return float(np.max(np.abs(x))) if len(x) else 1.0


@settings(max_examples=150, deadline=None, database=None)
@given(unit_values(min_size=2, max_size=60))
def test_from_values_matches_numpy(values: list[float]) -> None:
    x = np.array(values)
    s = SampleMeanStatistic.from_values(x)
    scale = _scale(x)
    assert s.n == len(x)
    assert_close(s.mean, float(np.mean(x)), abs_tol=1e-13 * scale)
    assert_close(s.variance, float(np.var(x, ddof=1)), abs_tol=1e-12 * scale**2)
    assert_close(s.variance_of_mean, float(np.var(x, ddof=1)) / len(x), abs_tol=1e-12 * scale**2)
    assert_close(s.sum, float(np.sum(x)), abs_tol=1e-12 * scale * len(x))
    assert_close(s.sum_squares, float(np.sum(x * x)), abs_tol=1e-12 * scale**2 * len(x))


@settings(max_examples=150, deadline=None, database=None)
@given(unit_values(min_size=1, max_size=60), st.data())
def test_merge_of_random_splits_equals_the_whole(values: list[float], data: st.DataObject) -> None:
    x = np.array(values)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(x)), max_size=6)))
    parts = np.split(x, cuts)  # may contain empty chunks: merging with nothing is the identity
    merged = merge_all(SampleMeanStatistic.from_values(p) for p in parts)
    scale = _scale(x)
    assert merged.n == len(x)
    assert_close(merged.mean, float(np.mean(x)), abs_tol=1e-12 * scale)
    assert_close(merged.m2, float(np.sum((x - np.mean(x)) ** 2)), abs_tol=1e-11 * scale**2 * len(x))


@settings(max_examples=100, deadline=None, database=None)
@given(
    st.lists(st.tuples(grid_floats(), grid_floats(), grid_floats(0, 10**4)), min_size=2, max_size=50),
    st.data(),
)
def test_cuped_and_ratio_merge_match_numpy_covariances(
    rows: list[tuple[float, float, float]], data: st.DataObject
) -> None:
    arr = np.array(rows)
    x, p, d = arr[:, 0], arr[:, 1], arr[:, 2]
    cut = data.draw(st.integers(0, len(x)))
    cuped = merge(CupedStatistic.from_values(x[:cut], p[:cut]), CupedStatistic.from_values(x[cut:], p[cut:]))
    scale = _scale(arr)
    assert cuped.pre_nonzero == int(np.count_nonzero(p))
    cov = np.cov(x, p, ddof=1)
    assert_close(cuped.xp_comoment / (len(x) - 1), float(cov[0, 1]), abs_tol=1e-11 * scale**2)
    assert_close(cuped.p_m2 / (len(x) - 1), float(cov[1, 1]), abs_tol=1e-11 * scale**2)
    assert_close(cuped.xp_sum, float(np.sum(x * p)), abs_tol=1e-11 * scale**2 * len(x))

    ratio = merge(RatioStatistic.from_values(x[:cut], d[:cut]), RatioStatistic.from_values(x[cut:], d[cut:]))
    assert_close(ratio.md_sum_product, float(np.sum(x * d)), abs_tol=1e-11 * scale**2 * len(x))
    if np.mean(d) != 0:
        r = np.sum(x) / np.sum(d)
        c = np.cov(x, d, ddof=1)
        expected = (c[0, 0] - 2 * r * c[0, 1] + r * r * c[1, 1]) / np.mean(d) ** 2
        assert_close(ratio.mean, float(r), abs_tol=1e-12 * scale)
        # cancellation in s_m² − 2R·s_md + R²·s_d² leaves rounding of the size of its terms
        terms = float(c[0, 0] + abs(2 * r * c[0, 1]) + r * r * c[1, 1]) / np.mean(d) ** 2
        floor = 1e-12 * (scale / np.mean(d)) ** 2
        assert_close(ratio.variance, float(expected), abs_tol=1e-9 * terms + floor)


@pytest.mark.parametrize("offset", [1e6, 1e8])
def test_merge_stays_accurate_for_values_with_a_large_offset(offset: float) -> None:
    rng = np.random.default_rng(7)
    x = offset + rng.normal(0.0, 1.0, 20_000)
    parts = np.array_split(x, 37)
    merged = merge_all(SampleMeanStatistic.from_values(p) for p in parts)
    expected = float(np.var(x, ddof=1))
    assert_close(merged.variance, expected)
    # The same data through float power sums loses most digits: the test above can fail.
    naive = SampleMeanStatistic.from_sums(len(x), float(np.sum(x)), float(np.sum(x * x)))
    assert naive.variance is None or abs(naive.variance - expected) / expected > 1e-6


def test_sums_and_stable_form_round_trip() -> None:
    x = np.array([3.0, 4.5, 0.0, 12.25, 7.0])
    s = SampleMeanStatistic.from_values(x)
    back = SampleMeanStatistic.from_sums(s.n, s.sum, s.sum_squares)
    assert back.n == 5
    assert_close(back.mean, 5.35)
    assert_close(back.variance, float(np.var(x, ddof=1)))
    record = dataclasses.asdict(s)
    assert record.keys() == {"n", "mean", "m2"}
    assert SampleMeanStatistic(**record) == s


def test_cuped_from_sums_matches_from_values() -> None:
    x = np.array([1.0, 2.0, 0.0, 5.0, 3.0, 8.0])
    p = np.array([0.0, 1.0, 0.0, 4.0, 2.0, 6.0])
    a = CupedStatistic.from_values(x, p)
    b = CupedStatistic.from_sums(6, x.sum(), (x * x).sum(), p.sum(), (p * p).sum(), (x * p).sum(), 4)
    for field in ("x_mean", "p_mean", "x_m2", "p_m2", "xp_comoment"):
        assert_close(getattr(b, field), getattr(a, field), abs_tol=1e-12)
    assert a.pre_nonzero == b.pre_nonzero == 4


def test_cuped_ratio_from_sums_matches_from_values_and_merges() -> None:
    rng = np.random.default_rng(3)
    cols = [rng.poisson(3, 40).astype(float) for _ in range(4)]
    a = CupedRatioStatistic.from_values(*cols)
    stacked = np.stack(cols)
    b = CupedRatioStatistic.from_sums(40, stacked.sum(axis=1), stacked @ stacked.T, a.pre_nonzero)
    for i in range(4):
        assert_close(b.moments.means[i], a.moments.means[i])
        for j in range(4):
            assert_close(b.moments.comoments[i][j], a.moments.comoments[i][j], abs_tol=1e-9)
    halves = merge(
        CupedRatioStatistic.from_values(*[c[:15] for c in cols]),
        CupedRatioStatistic.from_values(*[c[15:] for c in cols]),
    )
    assert halves.pre_nonzero == a.pre_nonzero
    assert_close(halves.post.mean, float(cols[0].sum() / cols[1].sum()))


def test_undefined_moments_are_none_not_nan() -> None:
    empty = SampleMeanStatistic.from_values([])
    assert empty.n == 0 and empty.variance is None and empty.variance_of_mean is None
    assert empty.summary().mean is None and empty.summary().reason == "no units"
    one = SampleMeanStatistic.from_values([4.0])
    assert one.variance is None and one.summary().mean == 4.0 and one.summary().reason == "fewer than 2 units"
    zero_d = RatioStatistic.from_values([1.0, 2.0], [0.0, 0.0])
    assert zero_d.mean is None and zero_d.variance is None
    assert zero_d.summary().reason == "denominator mean is 0"
    assert CupedRatioStatistic.from_values([1.0], [0.0], [1.0], [1.0]).linearised() is None
    assert Moments.from_values([1.0]).covariance(0, 0) is None
    assert SampleMeanStatistic.from_sums(0, 0.0, 0.0).summary().mean is None


def test_merge_refuses_different_kinds() -> None:
    with pytest.raises(TypeError):
        merge(SampleMeanStatistic.from_values([1.0]), CupedStatistic.from_values([1.0], [1.0]))  # type: ignore[type-var]
    with pytest.raises(ValueError):
        merge_all([])
