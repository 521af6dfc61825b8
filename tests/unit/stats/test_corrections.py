# ruff: noqa: RUF002, RUF003 - formulas keep their own notation (Greek letters, minus signs)
"""Bonferroni and Benjamini–Hochberg: worked examples and statsmodels' multipletests."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from expconsole.stats import (
    CorrectionEntry,
    CorrectionFlags,
    ResultOptions,
    SampleMeanStatistic,
    ScorecardRow,
    adjusted_alphas,
    benjamini_hochberg_alpha,
    compute_scorecard,
    experiment_result,
)


def E(metric: str, group: str, category: str, p: float | None = 0.5) -> CorrectionEntry:
    return CorrectionEntry(metric, group, category, p)  # type: ignore[arg-type]


# two test groups (B, C), primaries m1 m2, secondaries s1 s2 s3, one other metric
ENTRIES = [E(m, g, "primary") for m in ("m1", "m2") for g in ("B", "C")]
ENTRIES += [E(s, g, "secondary") for s in ("s1", "s2", "s3") for g in ("B", "C")]
ENTRIES += [E("o1", g, "other") for g in ("B", "C")]


def _by_category(alphas: list[float]) -> dict[str, set[float]]:
    out: dict[str, set[float]] = {}
    for e, a in zip(ENTRIES, alphas, strict=True):
        out.setdefault(e.category, set()).add(round(a, 15))
    return out


def test_no_correction_keeps_alpha() -> None:
    assert set(adjusted_alphas(ENTRIES, 0.05, CorrectionFlags())) == {0.05}


def test_bonferroni_per_variant_divides_by_test_groups() -> None:
    got = _by_category(adjusted_alphas(ENTRIES, 0.05, CorrectionFlags(bonferroni_per_variant=True)))
    assert got == {"primary": {0.025}, "secondary": {0.025}, "other": {0.05}}
    three = adjusted_alphas(ENTRIES, 0.06, CorrectionFlags(bonferroni_per_variant=True, test_groups=3))
    assert three[0] == pytest.approx(0.02)


def test_bonferroni_per_metric_default_weight_half() -> None:
    got = _by_category(adjusted_alphas(ENTRIES, 0.06, CorrectionFlags(bonferroni_per_metric=True)))
    # primaries share 0.5·0.06 = 0.03 → 0.015 each; secondaries share 0.03 → 0.01 each
    assert got == {"primary": {0.015}, "secondary": {0.01}, "other": {0.06}}


def test_bonferroni_per_metric_explicit_weight_and_only_primaries() -> None:
    flags = CorrectionFlags(bonferroni_per_metric=True, bonferroni_primary_metric_weight=0.8)
    got = _by_category(adjusted_alphas(ENTRIES, 0.05, flags))
    assert got == {"primary": {0.02}, "secondary": {round(0.01 / 3, 15)}, "other": {0.05}}
    primaries = [
        E("m1", "B", "primary"),
        E("m2", "B", "primary"),
        E("m3", "B", "primary"),
        E("m4", "B", "primary"),
    ]
    assert adjusted_alphas(primaries, 0.05, CorrectionFlags(bonferroni_per_metric=True)) == [0.0125] * 4
    secondaries = [E("s1", "B", "secondary"), E("s2", "B", "secondary")]
    assert adjusted_alphas(secondaries, 0.05, CorrectionFlags(bonferroni_per_metric=True)) == [0.025] * 2


def test_bonferroni_stacks_per_variant_and_per_metric() -> None:
    flags = CorrectionFlags(bonferroni_per_variant=True, bonferroni_per_metric=True)
    got = _by_category(adjusted_alphas(ENTRIES, 0.06, flags))
    # 0.06 / 2 groups = 0.03; primaries 0.015/2, secondaries 0.015/3
    assert got == {"primary": {0.0075}, "secondary": {0.005}, "other": {0.06}}


def test_bh_worked_example() -> None:
    # m = 5, α = 0.05: thresholds .01 .02 .03 .04 .05 against sorted .001 .008 .035 .039 .2:
    # p_(4) = .039 ≤ .04 is the largest pass (p_(3) = .035 > .03 comes along: step-up)
    assert benjamini_hochberg_alpha([0.2, 0.035, 0.001, 0.008, 0.039], 0.05) == pytest.approx(0.04)
    # sorted .001 .008 .039 .041 .2: .041 > .04 and .039 > .03, so k = 2
    assert benjamini_hochberg_alpha([0.2, 0.039, 0.001, 0.008, 0.041], 0.05) == pytest.approx(0.02)
    assert benjamini_hochberg_alpha([0.5, 0.3, 0.02], 0.05) == pytest.approx(0.05 / 3)  # none passes
    assert benjamini_hochberg_alpha([0.01, 0.02, 0.03], 0.05) == pytest.approx(0.05)  # all pass
    assert benjamini_hochberg_alpha([], 0.05) == 0.05
    # "≤": a p-value equal to its threshold passes (.05 ≤ 2·.05/2)
    assert benjamini_hochberg_alpha([0.01, 0.05], 0.05) == 0.05


def test_bh_families_per_metric_per_variant_and_both() -> None:
    entries = [
        E("m1", "B", "primary", 0.001),
        E("m2", "B", "primary", 0.04),
        E("s1", "B", "secondary", 0.3),
        E("m1", "C", "primary", 0.02),
        E("m2", "C", "primary", 0.5),
        E("s1", "C", "secondary", 0.9),
        E("o1", "B", "other", 0.001),
    ]
    # per metric: each group's metrics together. B: p = .001 .04 .3 → k=1 → .05/3. C: .02 .5 .9 → none → .05/3
    per_metric = adjusted_alphas(entries, 0.05, CorrectionFlags(bh_per_metric=True))
    assert per_metric == pytest.approx([0.05 / 3] * 6 + [0.05])
    # per variant: each metric's groups together.
    # m1: .001 .02 → k=2 → .05; m2: .04 .5 → k=0 → .025; s1: .3 .9 → .025
    per_variant = adjusted_alphas(entries, 0.05, CorrectionFlags(bh_per_variant=True))
    assert per_variant == pytest.approx([0.05, 0.025, 0.025, 0.05, 0.025, 0.025, 0.05])
    # both: one family of six: .001 .02 .04 .3 .5 .9 → k=1 (.02 > 2·.05/6) → .05/6
    both = adjusted_alphas(entries, 0.05, CorrectionFlags(bh_per_metric=True, bh_per_variant=True))
    assert both == pytest.approx([0.05 / 6] * 6 + [0.05])
    # primary only: secondaries keep α; B's primaries .001 .04 → k=2 → .05
    primary_only = adjusted_alphas(
        entries, 0.05, CorrectionFlags(bh_per_metric=True, bh_primary_metrics_only=True)
    )
    assert primary_only == pytest.approx([0.05, 0.05, 0.05, 0.025, 0.025, 0.05, 0.05])


def test_bh_takes_precedence_over_bonferroni_and_undefined_p_values() -> None:
    entries = [E("m1", "B", "primary", 0.001), E("m2", "B", "primary", None), E("m3", "B", "primary", 0.9)]
    flags = CorrectionFlags(bh_per_metric=True, bonferroni_per_variant=True, bonferroni_per_metric=True)
    # the undefined p-value takes no part: m = 2, k = 1 → .025 for all three
    assert adjusted_alphas(entries, 0.05, flags) == pytest.approx([0.025] * 3)


def test_invalid_settings_are_rejected() -> None:
    with pytest.raises(ValueError):
        CorrectionFlags(bonferroni_primary_metric_weight=1.5)
    with pytest.raises(ValueError):
        adjusted_alphas(ENTRIES, 0.0, CorrectionFlags())


@settings(max_examples=200, deadline=None, database=None)
@given(
    st.lists(st.floats(0.0, 1.0), min_size=1, max_size=60),
    st.sampled_from([0.05, 0.1, 0.2, 0.01]),
)
def test_bh_alpha_rejects_exactly_what_multipletests_rejects(p_values: list[float], alpha: float) -> None:
    adjusted = benjamini_hochberg_alpha(p_values, alpha)
    reject, _, _, _ = multipletests(p_values, alpha=alpha, method="fdr_bh")
    assert list(reject) == [p <= adjusted for p in p_values]
    m = len(p_values)
    assert any(np.isclose(adjusted, k * alpha / m, rtol=1e-12) for k in range(1, m + 1))


def test_scorecard_uses_the_adjusted_alpha_for_intervals_but_not_p_values() -> None:
    rng = np.random.default_rng(0)
    control = SampleMeanStatistic.from_values(rng.normal(10, 2, 400))
    rows = [
        ScorecardRow(
            f"m{i}",
            "B",
            "primary",
            SampleMeanStatistic.from_values(rng.normal(10 + 0.1 * i, 2, 400)),
            control,
        )
        for i in range(4)
    ]
    flags = CorrectionFlags(bonferroni_per_metric=True)
    results = compute_scorecard(rows, ResultOptions(confidence=95), flags)
    for row, res in zip(rows, results, strict=True):
        plain = experiment_result(row.test, row.control, ResultOptions(confidence=95))
        corrected = experiment_result(
            row.test, row.control, ResultOptions(confidence=95, adjusted_alpha=0.0125)
        )
        assert res.to_dict() == corrected.to_dict()
        assert res.to_dict()["adjustedAlpha"] == pytest.approx(0.0125)
        assert res.to_dict()["p_value"] == plain.to_dict()["p_value"]
        assert res.to_dict()["confidence_interval_delta"] > plain.to_dict()["confidence_interval_delta"]
    bh = compute_scorecard(rows, ResultOptions(confidence=95), CorrectionFlags(bh_per_metric=True))
    p_values = [r.p_value for r in bh]
    expected = benjamini_hochberg_alpha([p for p in p_values if p is not None], 0.05)
    assert {r.alpha for r in bh} == {expected}
