# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters, minus signs)
"""Multiple-comparison corrections: the α each result entry is judged at (`adjustedAlpha`).

p-values are never adjusted; intervals use the adjusted α.

- Bonferroni per variant: α ÷ number of test groups.
- Bonferroni per metric: primary metrics share w·α equally, secondary ones (1−w)·α. w defaults
  to 1 when only primary metrics are present, 0 when only secondary ones are (so they keep the
  whole α rather than half of it), 0.5 when both are. The two stack (per variant first).
- Benjamini–Hochberg, with families as the peer defines them: per metric = for each test group,
  the p-values of all its metrics; per variant = for each metric, the p-values of all test
  groups; both = one family of everything. `adjustedAlpha = k·α/m` for the largest k with
  p_(k) ≤ k·α/m, else α/m. With "primary metrics only" the BH families hold primary metrics
  alone and secondary ones keep α. The primary-only flag alone (no family flag) does nothing.
- BH and Bonferroni are alternatives: when a BH family flag is set, the Bonferroni flags are
  ignored.
- `other` metrics are never corrected. Entries without a p-value (undefined) take part in no
  count and receive their family's α.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Category",
    "CorrectionEntry",
    "CorrectionFlags",
    "adjusted_alphas",
    "benjamini_hochberg_alpha",
    "primary_metric_weight",
]

Category = Literal["primary", "secondary", "other"]


@dataclass(frozen=True, slots=True)
class CorrectionEntry:
    """One result entry as the corrections see it: which metric, which test group, its role and p-value."""

    metric_id: str
    group: str
    category: Category
    p_value: float | None


@dataclass(frozen=True, slots=True)
class CorrectionFlags:
    """The experiment's correction settings (names follow the pulse-results query parameters)."""

    bonferroni_per_variant: bool = False
    bonferroni_per_metric: bool = False
    bonferroni_primary_metric_weight: float | None = None
    bh_per_metric: bool = False
    bh_per_variant: bool = False
    bh_primary_metrics_only: bool = False
    test_groups: int | None = None
    """Number of test groups for Bonferroni per variant; default: the distinct groups among the entries."""

    def __post_init__(self) -> None:
        w = self.bonferroni_primary_metric_weight
        if w is not None and not 0.0 <= w <= 1.0:
            raise ValueError("bonferroniPrimaryMetricWeight must be between 0 and 1")
        if self.test_groups is not None and self.test_groups < 1:
            raise ValueError("test_groups must be at least 1")

    @property
    def uses_bh(self) -> bool:
        return self.bh_per_metric or self.bh_per_variant


def benjamini_hochberg_alpha(p_values: Sequence[float], alpha: float) -> float:
    """k·α/m for the largest k with p_(k) ≤ k·α/m, or α/m when none passes (α for no p-values)."""
    m = len(p_values)
    if m == 0:
        return alpha
    ordered = sorted(p_values)
    for k in range(m, 0, -1):
        if ordered[k - 1] <= k * alpha / m:
            return k * alpha / m
    return alpha / m


def primary_metric_weight(has_primary: bool, has_secondary: bool, weight: float | None) -> float:
    """w for Bonferroni per metric: the configured weight, else 1 / 0 / 0.5 by which kinds are present."""
    if weight is not None:
        return weight
    if has_primary and not has_secondary:
        return 1.0
    if has_secondary and not has_primary:
        return 0.0
    return 0.5


def _validate_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be strictly between 0 and 1")


def adjusted_alphas(entries: Sequence[CorrectionEntry], alpha: float, flags: CorrectionFlags) -> list[float]:
    """The adjusted α of each entry, in the order given."""
    _validate_alpha(alpha)
    if flags.uses_bh:
        return _bh(entries, alpha, flags)
    return _bonferroni(entries, alpha, flags)


def _bonferroni(entries: Sequence[CorrectionEntry], alpha: float, flags: CorrectionFlags) -> list[float]:
    base = alpha
    if flags.bonferroni_per_variant:
        groups = flags.test_groups or len({e.group for e in entries if e.category != "other"}) or 1
        base = alpha / groups
    shares: dict[str, float] = {"primary": base, "secondary": base}
    if flags.bonferroni_per_metric:
        primaries = {e.metric_id for e in entries if e.category == "primary"}
        secondaries = {e.metric_id for e in entries if e.category == "secondary"}
        w = primary_metric_weight(bool(primaries), bool(secondaries), flags.bonferroni_primary_metric_weight)
        if primaries:
            shares["primary"] = base * w / len(primaries)
        if secondaries:
            shares["secondary"] = base * (1.0 - w) / len(secondaries)
    return [alpha if e.category == "other" else shares[e.category] for e in entries]


def _bh(entries: Sequence[CorrectionEntry], alpha: float, flags: CorrectionFlags) -> list[float]:
    covered = {"primary"} if flags.bh_primary_metrics_only else {"primary", "secondary"}

    def family(e: CorrectionEntry) -> Hashable:
        if flags.bh_per_metric and flags.bh_per_variant:
            return ()
        return e.group if flags.bh_per_metric else e.metric_id

    p_by_family: dict[Hashable, list[float]] = defaultdict(list)
    for e in entries:
        if e.category in covered and e.p_value is not None:
            p_by_family[family(e)].append(e.p_value)
    family_alpha = {key: benjamini_hochberg_alpha(ps, alpha) for key, ps in p_by_family.items()}
    return [family_alpha.get(family(e), alpha) if e.category in covered else alpha for e in entries]
