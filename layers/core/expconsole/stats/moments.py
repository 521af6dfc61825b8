# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""Sufficient statistics of one group, kept in a numerically stable form.

Representation. Every statistic stores `n`, the mean of each column and the centred co-moments
`C_ij = Σ (a_i − ā_i)(a_j − ā_j)` (for one column, `m2 = Σ (x − x̄)²`), never raw power sums. The raw sums
(docs/statistics.md, 'Group statistics') are exact functions of this form and are offered as
properties (`Σx = n·x̄`, `Σx² = m2 + n·x̄²`, `Σxp = C_xp + n·x̄·p̄`); `from_sums` converts the other
way for records that were written as sums, which cannot undo cancellation already suffered when
`Σx²` is huge next to the spread. Days are combined with the pairwise update of Chan, Golub and
LeVeque on the centred form, so merging any split of the units gives the whole to rounding whatever
the offset of the values. The pulse pipeline should therefore store the fields of these dataclasses
(`dataclasses.asdict`), not sums.

Statistics hand the tests a `GroupSummary` (n, mean, unit variance), with None where a figure
is undefined (no units, one unit, a zero ratio denominator) and the reason why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

from ._numeric import divide, finite_or_none

__all__ = [
    "CupedRatioStatistic",
    "CupedStatistic",
    "GroupSummary",
    "Moments",
    "RatioStatistic",
    "SampleMeanStatistic",
    "Statistic",
    "merge",
    "merge_all",
]

NO_UNITS = "no units"
ONE_UNIT = "fewer than 2 units"
ZERO_DENOMINATOR = "denominator mean is 0"
OUT_OF_RANGE = "values out of floating-point range"


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """What a two-sample test needs from one group: n, the mean and the per-unit sample variance."""

    n: int
    mean: float | None
    variance: float | None
    reason: str | None = None

    @property
    def variance_of_mean(self) -> float | None:
        """s²/n, the squared standard error of the mean."""
        if self.variance is None or self.n <= 0:
            return None
        return self.variance / self.n

    @property
    def std_error(self) -> float | None:
        """√(s²/n), reported as `test_std` / `control_std`."""
        v = self.variance_of_mean
        return None if v is None else math.sqrt(v)

    @classmethod
    def of(
        cls, n: int, mean: float | None, variance: float | None, reason: str | None = None
    ) -> GroupSummary:
        """A summary whose non-finite figures (overflowed moments) become None with a reason."""
        if n == 0:
            return cls(0, None, None, NO_UNITS)
        if mean is not None and finite_or_none(mean) is None:
            return cls(n, None, None, OUT_OF_RANGE)
        if n == 1:
            return cls(1, mean, None, reason or ONE_UNIT)
        if variance is not None and finite_or_none(variance) is None:
            return cls(n, mean, None, OUT_OF_RANGE)
        if variance is not None:
            variance = max(float(variance), 0.0)
        return cls(n, None if mean is None else float(mean), variance, reason)


def _centred(columns: Sequence[ArrayLike]) -> tuple[int, tuple[float, ...], tuple[tuple[float, ...], ...]]:
    """n, means and co-moment matrix of raw columns by the corrected two-pass algorithm."""
    arrays = [np.asarray(c, dtype=float).ravel() for c in columns]
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise ValueError("all columns must have the same length")
    k = len(arrays)
    if n == 0:
        return 0, (0.0,) * k, tuple((0.0,) * k for _ in range(k))
    stacked = np.stack(arrays, axis=1)
    with np.errstate(all="ignore"):  # overflow yields inf/NaN moments, which summaries turn into None
        means = stacked.mean(axis=0)
        dev = stacked - means
        # second pass: fold the residual mean of the deviations back in (corrected two-pass)
        means = means + dev.mean(axis=0)
        dev = stacked - means
        com = dev.T @ dev
    return n, tuple(float(m) for m in means), tuple(tuple(float(v) for v in row) for row in com)


@dataclass(frozen=True, slots=True)
class Moments:
    """n, column means and centred co-moments of k columns; the general form behind every statistic."""

    n: int
    means: tuple[float, ...]
    comoments: tuple[tuple[float, ...], ...]

    @classmethod
    def from_values(cls, *columns: ArrayLike) -> Moments:
        """Exact (two-pass) moments of raw per-unit columns of equal length."""
        return cls(*_centred(columns))

    @classmethod
    def from_sums(cls, n: int, sums: Sequence[float], products: Sequence[Sequence[float]]) -> Moments:
        """From `n`, `Σa_i` and `Σa_i·a_j`; subject to the cancellation the sums already carry."""
        k = len(sums)
        if n <= 0:
            return cls(0, (0.0,) * k, tuple((0.0,) * k for _ in range(k)))
        means = tuple(float(s) / n for s in sums)
        com = []
        for i in range(k):
            row = []
            for j in range(k):
                c = float(products[i][j]) - float(sums[i]) * means[j]
                row.append(max(c, 0.0) if i == j else c)
            com.append(tuple(row))
        return cls(n, means, tuple(com))

    def merge(self, other: Moments) -> Moments:
        """Chan et al.'s pairwise combination: exact for the union of the two sets of units."""
        if len(self.means) != len(other.means):
            raise ValueError("cannot merge moments of different widths")
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        n = self.n + other.n
        weight = self.n * other.n / n
        delta = [b - a for a, b in zip(self.means, other.means, strict=True)]
        means = tuple(a + d * other.n / n for a, d in zip(self.means, delta, strict=True))
        com = tuple(
            tuple(
                self.comoments[i][j] + other.comoments[i][j] + delta[i] * delta[j] * weight
                for j in range(len(delta))
            )
            for i in range(len(delta))
        )
        return Moments(n, means, com)

    @property
    def sums(self) -> tuple[float, ...]:
        """Σa_i."""
        return tuple(self.n * m for m in self.means)

    @property
    def products(self) -> tuple[tuple[float, ...], ...]:
        """Σa_i·a_j."""
        k = len(self.means)
        return tuple(
            tuple(self.comoments[i][j] + self.n * self.means[i] * self.means[j] for j in range(k))
            for i in range(k)
        )

    def covariance(self, i: int, j: int) -> float | None:
        """Sample covariance (÷ n−1) of columns i and j; None below 2 units."""
        if self.n < 2:
            return None
        return self.comoments[i][j] / (self.n - 1)


def _mean_summary(n: int, mean: float, m2: float) -> GroupSummary:
    return GroupSummary.of(n, mean, m2 / (n - 1) if n >= 2 else None)


@dataclass(frozen=True, slots=True)
class SampleMeanStatistic:
    """A mean metric: n, x̄ and m2 = Σ(x − x̄)²."""

    n: int
    mean: float
    m2: float

    @classmethod
    def from_values(cls, x: ArrayLike) -> SampleMeanStatistic:
        """From raw per-unit values."""
        n, means, com = _centred([x])
        return cls(n, means[0], com[0][0])

    @classmethod
    def from_sums(cls, n: int, sum: float, sum_squares: float) -> SampleMeanStatistic:
        """From a record written as the sums `n, Σx, Σx²`."""
        m = Moments.from_sums(n, [sum], [[sum_squares]])
        return cls(m.n, m.means[0], m.comoments[0][0])

    def merge(self, other: SampleMeanStatistic) -> SampleMeanStatistic:
        """The statistic of the union of both sets of units."""
        m = self._moments().merge(other._moments())
        return SampleMeanStatistic(m.n, m.means[0], m.comoments[0][0])

    def _moments(self) -> Moments:
        return Moments(self.n, (self.mean,), ((self.m2,),))

    @property
    def sum(self) -> float:
        """Σx."""
        return self.n * self.mean

    @property
    def sum_squares(self) -> float:
        """Σx²."""
        return self.m2 + self.n * self.mean * self.mean

    @property
    def variance(self) -> float | None:
        """Sample variance s² (÷ n−1); None below 2 units."""
        return self.m2 / (self.n - 1) if self.n >= 2 else None

    @property
    def variance_of_mean(self) -> float | None:
        """s²/n."""
        v = self.variance
        return None if v is None else v / self.n

    def summary(self) -> GroupSummary:
        """n, mean and variance with undefined figures as None."""
        return _mean_summary(self.n, self.mean, self.m2)


@dataclass(frozen=True, slots=True)
class RatioStatistic:
    """A ratio metric Σm/Σd per group: means of numerator and denominator and their centred co-moments."""

    n: int
    m_mean: float
    d_mean: float
    m_m2: float
    d_m2: float
    md_comoment: float

    @classmethod
    def from_values(cls, m: ArrayLike, d: ArrayLike) -> RatioStatistic:
        """From raw per-unit numerators and denominators."""
        return cls._from_moments(Moments.from_values(m, d))

    @classmethod
    def from_sums(
        cls,
        n: int,
        m_sum: float,
        m_sum_squares: float,
        d_sum: float,
        d_sum_squares: float,
        md_sum_product: float,
    ) -> RatioStatistic:
        """From the stored `n, Σy, Σy², Σd, Σd², Σyd` record."""
        return cls._from_moments(
            Moments.from_sums(
                n, [m_sum, d_sum], [[m_sum_squares, md_sum_product], [md_sum_product, d_sum_squares]]
            )
        )

    @classmethod
    def _from_moments(cls, mo: Moments) -> RatioStatistic:
        c = mo.comoments
        return cls(mo.n, mo.means[0], mo.means[1], c[0][0], c[1][1], c[0][1])

    def _moments(self) -> Moments:
        return Moments(
            self.n,
            (self.m_mean, self.d_mean),
            ((self.m_m2, self.md_comoment), (self.md_comoment, self.d_m2)),
        )

    def merge(self, other: RatioStatistic) -> RatioStatistic:
        """The statistic of the union of both sets of units."""
        return RatioStatistic._from_moments(self._moments().merge(other._moments()))

    @property
    def m_sum(self) -> float:
        return self.n * self.m_mean

    @property
    def d_sum(self) -> float:
        return self.n * self.d_mean

    @property
    def m_sum_squares(self) -> float:
        return self.m_m2 + self.n * self.m_mean * self.m_mean

    @property
    def d_sum_squares(self) -> float:
        return self.d_m2 + self.n * self.d_mean * self.d_mean

    @property
    def md_sum_product(self) -> float:
        return self.md_comoment + self.n * self.m_mean * self.d_mean

    @property
    def mean(self) -> float | None:
        """R = ȳ/d̄; None without units, with a zero denominator mean or out of range."""
        if self.n == 0:
            return None
        return divide(self.m_mean, self.d_mean)

    @property
    def variance(self) -> float | None:
        """Delta-method unit variance (s_y² − 2R·s_yd + R²·s_d²)/d̄², so that var(R) = variance/n."""
        r = self.mean
        if r is None or self.n < 2:
            return None
        q = finite_or_none(self.m_m2 - 2.0 * r * self.md_comoment + r * r * self.d_m2)
        if q is None:
            return None
        return divide(max(q, 0.0), (self.n - 1) * self.d_mean * self.d_mean)

    @property
    def variance_of_mean(self) -> float | None:
        v = self.variance
        return None if v is None else v / self.n

    def summary(self) -> GroupSummary:
        """n, R and its delta-method unit variance with undefined figures as None."""
        if self.n == 0:
            return GroupSummary(0, None, None, NO_UNITS)
        r = self.mean
        if r is None:
            reason = ZERO_DENOMINATOR if self.d_mean == 0 else OUT_OF_RANGE
            return GroupSummary(self.n, None, None, reason)
        if self.n == 1:
            return GroupSummary(1, r, None, ONE_UNIT)
        v = self.variance
        return GroupSummary(self.n, r, v, None if v is not None else OUT_OF_RANGE)


@dataclass(frozen=True, slots=True)
class CupedStatistic:
    """A mean metric with its pre-exposure covariate p: moments of (x, p), count of units with p ≠ 0."""

    n: int
    x_mean: float
    p_mean: float
    x_m2: float
    p_m2: float
    xp_comoment: float
    pre_nonzero: int

    @classmethod
    def from_values(cls, x: ArrayLike, p: ArrayLike) -> CupedStatistic:
        """From raw per-unit values and pre-period values (0 for units without pre-period data)."""
        p_arr = np.asarray(p, dtype=float).ravel()
        return cls._from_moments(Moments.from_values(x, p_arr), int(np.count_nonzero(p_arr)))

    @classmethod
    def from_sums(
        cls,
        n: int,
        x_sum: float,
        x_sum_squares: float,
        p_sum: float,
        p_sum_squares: float,
        xp_sum: float,
        pre_nonzero: int,
    ) -> CupedStatistic:
        """From the stored `n, Σx, Σx², Σp, Σp², Σxp` record plus the count of units with p ≠ 0."""
        mo = Moments.from_sums(n, [x_sum, p_sum], [[x_sum_squares, xp_sum], [xp_sum, p_sum_squares]])
        return cls._from_moments(mo, pre_nonzero)

    @classmethod
    def _from_moments(cls, mo: Moments, pre_nonzero: int) -> CupedStatistic:
        c = mo.comoments
        return cls(mo.n, mo.means[0], mo.means[1], c[0][0], c[1][1], c[0][1], pre_nonzero)

    def _moments(self) -> Moments:
        return Moments(
            self.n,
            (self.x_mean, self.p_mean),
            ((self.x_m2, self.xp_comoment), (self.xp_comoment, self.p_m2)),
        )

    def merge(self, other: CupedStatistic) -> CupedStatistic:
        """The statistic of the union of both sets of units."""
        return CupedStatistic._from_moments(
            self._moments().merge(other._moments()), self.pre_nonzero + other.pre_nonzero
        )

    @property
    def post(self) -> SampleMeanStatistic:
        """The metric alone."""
        return SampleMeanStatistic(self.n, self.x_mean, self.x_m2)

    @property
    def pre(self) -> SampleMeanStatistic:
        """The pre-period covariate alone."""
        return SampleMeanStatistic(self.n, self.p_mean, self.p_m2)

    @property
    def mean(self) -> float:
        return self.x_mean

    @property
    def variance(self) -> float | None:
        return self.post.variance

    @property
    def variance_of_mean(self) -> float | None:
        return self.post.variance_of_mean

    @property
    def xp_sum(self) -> float:
        """Σxp."""
        return self.xp_comoment + self.n * self.x_mean * self.p_mean

    def summary(self) -> GroupSummary:
        """The unadjusted summary of the metric."""
        return self.post.summary()


@dataclass(frozen=True, slots=True)
class CupedRatioStatistic:
    """A ratio metric with its pre-period ratio: moments of (m, d, pre m, pre d), units with pre data."""

    moments: Moments
    pre_nonzero: int

    def __post_init__(self) -> None:
        if len(self.moments.means) != 4:
            raise ValueError("a CUPED ratio statistic has the 4 columns m, d, pre m, pre d")

    @classmethod
    def from_values(
        cls, m: ArrayLike, d: ArrayLike, pre_m: ArrayLike, pre_d: ArrayLike
    ) -> CupedRatioStatistic:
        """From raw per-unit values; a unit has pre-period data when its pre numerator or denominator ≠ 0."""
        pm = np.asarray(pre_m, dtype=float).ravel()
        pd = np.asarray(pre_d, dtype=float).ravel()
        nonzero = int(np.count_nonzero((pm != 0) | (pd != 0)))
        return cls(Moments.from_values(m, d, pm, pd), nonzero)

    @classmethod
    def from_sums(
        cls, n: int, sums: Sequence[float], products: Sequence[Sequence[float]], pre_nonzero: int
    ) -> CupedRatioStatistic:
        """From `n`, the 4 column sums and the 4×4 sums of products, in the order m, d, pre m, pre d."""
        return cls(Moments.from_sums(n, sums, products), pre_nonzero)

    def merge(self, other: CupedRatioStatistic) -> CupedRatioStatistic:
        """The statistic of the union of both sets of units."""
        return CupedRatioStatistic(self.moments.merge(other.moments), self.pre_nonzero + other.pre_nonzero)

    def _ratio(self, i: int, j: int) -> RatioStatistic:
        mo = self.moments
        c = mo.comoments
        return RatioStatistic(mo.n, mo.means[i], mo.means[j], c[i][i], c[j][j], c[i][j])

    @property
    def n(self) -> int:
        return self.moments.n

    @property
    def post(self) -> RatioStatistic:
        """The ratio metric alone."""
        return self._ratio(0, 1)

    @property
    def pre(self) -> RatioStatistic:
        """The pre-period ratio alone."""
        return self._ratio(2, 3)

    def linearised(self) -> CupedStatistic | None:
        """Moments of the linearised ratios L = R + (m − R·d)/d̄ and L_pre likewise; None if a mean is 0.

        L has mean R and sample variance equal to the delta-method variance, so CUPED on (L, L_pre)
        is CUPED on the ratio metric.
        """
        mo = self.moments
        if mo.n == 0:
            return None
        r, rp = divide(mo.means[0], mo.means[1]), divide(mo.means[2], mo.means[3])
        inv_d, inv_pd = divide(1.0, mo.means[1]), divide(1.0, mo.means[3])
        if r is None or rp is None or inv_d is None or inv_pd is None:
            return None
        a = (inv_d, -r * inv_d, 0.0, 0.0)
        b = (0.0, 0.0, inv_pd, -rp * inv_pd)
        c = mo.comoments

        def form(u: Sequence[float], v: Sequence[float]) -> float:
            return sum(u[i] * c[i][j] * v[j] for i in range(4) for j in range(4) if u[i] and v[j])

        return CupedStatistic(
            mo.n, r, rp, max(form(a, a), 0.0), max(form(b, b), 0.0), form(a, b), self.pre_nonzero
        )

    def summary(self) -> GroupSummary:
        """The unadjusted summary of the ratio metric."""
        return self.post.summary()


Statistic = SampleMeanStatistic | RatioStatistic | CupedStatistic | CupedRatioStatistic
S = TypeVar("S", SampleMeanStatistic, RatioStatistic, CupedStatistic, CupedRatioStatistic)


def merge(a: S, b: S) -> S:
    """Combine the statistics of two disjoint sets of units (for example two days) of the same kind."""
    if type(a) is not type(b):
        raise TypeError(f"cannot merge {type(a).__name__} with {type(b).__name__}")
    return a.merge(b)


def merge_all(stats: Iterable[S]) -> S:
    """Combine a non-empty sequence of statistics of the same kind."""
    iterator = iter(stats)
    try:
        total = next(iterator)
    except StopIteration:
        raise ValueError("merge_all needs at least one statistic") from None
    for s in iterator:
        total = merge(total, s)
    return total
