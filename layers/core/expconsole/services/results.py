# ruff: noqa: RUF002 - formulas keep their own notation (Greek letters)
"""Pulse results of experiments and holdouts, computed on request from stored group statistics.

The only shared module that imports `expconsole.stats` (numpy, scipy): only the results function
(and the pulse pipeline) may import it.

Experiments. One read of the experiment, one or two Queries of its statistics (the latest day
index, then that day), then the engine. Unset query options take the experiment's settings:
`confidence` ← `defaultConfidenceInterval`; the correction flags ← `bonferroniCorrection`,
`bonferroniCorrectionPerMetric`, `benjaminiHochbergPerMetric`, `benjaminiHochbergPerVariant`,
`benjaminiPrimaryMetricsOnly`; `cuped` ← true (docs/statistics.md, 'CUPED'). Sequential figures follow
`sequentialTesting`, with the elapsed share of the planned `duration` measured from `startTime`
to the end of the result day (UTC). `analyticsType` bayesian adds the Bayesian fields (prior from
`bayesianPriors` for the metric, else flat); sprt adds the SPRT decision fields.

Corrections and the one returned pair. A request returns one test group against control, but
the α of its entries must be what the whole scorecard would give, or the same metric would get
a different `adjustedAlpha` depending on which pair is asked. The test groups are every enabled
group except the control (plus the requested one, even if disabled). Bonferroni per variant
divides α by their number; Bonferroni per metric and BH per metric (family: one test group's
metrics) depend on the requested group's entries only; BH per variant (family: one metric over
all test groups, or everything when both BH flags are set) needs the p-values of every test
group. So the scorecard is computed over all test groups vs control only when a BH per-variant
family is in force, and over the requested group alone otherwise (with the count of test
groups passed for Bonferroni): the same α at a fraction of the cost. A test group without stored
statistics for a metric takes no part in that metric's family.

SPRT settings: `sprtMDESettings[metricKey].groupSettings[groupKey = test id or name].mde`, else
`defaultSPRTMDE`, is a relative MDE in percent of the baseline mean: the control mean
(`sprtBaselineMode` in_experiment_control) or the group setting's `mean` (manual); power
`defaultSPRTPowerParam` percent (default 80). Without an MDE the SPRT fields are null.

Entries are ordered as the experiment lists its metrics; stored metrics the experiment does not
list are appended to `otherMetrics` (sorted by id); a listed metric without statistics for both
groups is left out.

Holdouts: control = held-out units (group `control`), test = the rest (group `test`); metrics are
the holdout's stored ones (its `monitoringMetrics` order first); `passPercentage` drives the
projected topline figures; no corrections, no sequential testing.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

from expconsole import kinds
from expconsole.days import today
from expconsole.errors import Invalid
from expconsole.models.results import (
    HOLDOUT_CONTROL_GROUP,
    HOLDOUT_TEST_GROUP,
    ExperimentResultsQuery,
    ExperimentResultsSeriesQuery,
    GroupStatistics,
    HoldoutResultsQuery,
)
from expconsole.services import entities, experiments
from expconsole.services.entities import Doc
from expconsole.stats import (
    BayesianPrior,
    CorrectionFlags,
    CupedRatioStatistic,
    CupedStatistic,
    Moments,
    RatioStatistic,
    ResultOptions,
    SampleMeanStatistic,
    ScorecardRow,
    SprtSettings,
    Statistic,
    compute_scorecard,
    experiment_result,
    holdout_result,
)
from expconsole.store import group_stats

DAY_MS = 86_400_000
CATEGORIES = (("primary", "primaryMetrics"), ("secondary", "secondaryMetrics"), ("other", "otherMetrics"))


# --- records <-> engine statistics -----------------------------------------------------------------


def statistic_of(record: GroupStatistics) -> Statistic:
    """The engine's statistic for a stored record."""
    m, c, n = record.means, record.comoments, record.n
    if record.kind == "mean":
        if not record.has_pre:
            return SampleMeanStatistic(n, m[0], c[0][0])
        return CupedStatistic(n, m[0], m[1], c[0][0], c[1][1], c[0][1], record.preNonzero or 0)
    if not record.has_pre:
        return RatioStatistic(n, m[0], m[1], c[0][0], c[1][1], c[0][1])
    moments = Moments(n, tuple(m), tuple(tuple(row) for row in c))
    return CupedRatioStatistic(moments, record.preNonzero or 0)


def record_of(
    stat: Statistic,
    *,
    kind: str,
    entity_id: str,
    ds: str,
    metric_id: str,
    group_id: str,
    directionality: str = "increase",
) -> GroupStatistics:
    """The stored record of an engine statistic (what the pulse pipeline writes)."""
    name, _, metric_type = metric_id.partition("::")
    pre: int | None = None
    if isinstance(stat, SampleMeanStatistic):
        stat_kind, n, means, com = "mean", stat.n, [stat.mean], [[stat.m2]]
    elif isinstance(stat, CupedStatistic):
        stat_kind, n, pre = "mean", stat.n, stat.pre_nonzero
        means = [stat.x_mean, stat.p_mean]
        com = [[stat.x_m2, stat.xp_comoment], [stat.xp_comoment, stat.p_m2]]
    elif isinstance(stat, RatioStatistic):
        stat_kind, n = "ratio", stat.n
        means = [stat.m_mean, stat.d_mean]
        com = [[stat.m_m2, stat.md_comoment], [stat.md_comoment, stat.d_m2]]
    else:
        stat_kind, n, pre = "ratio", stat.n, stat.pre_nonzero
        means = list(stat.moments.means)
        com = [list(row) for row in stat.moments.comoments]
    return GroupStatistics(
        entityKind=kind,  # type: ignore[arg-type]
        entityID=entity_id,
        ds=ds,
        metricID=metric_id,
        groupID=group_id,
        metricName=name,
        metricType=metric_type,
        directionality=directionality,  # type: ignore[arg-type]
        kind=stat_kind,  # type: ignore[arg-type]
        n=n,
        means=means,
        comoments=com,
        preNonzero=pre,
    )


# --- shared helpers ----------------------------------------------------------------------------------


def _day(kind: str, entity_id: str, date: str | None) -> tuple[str | None, list[GroupStatistics]]:
    if date is None:
        latest = group_stats.latest_day(kind, entity_id)
        if latest is None:
            return None, []
        date = latest.ds
    records = group_stats.read_day(kind, entity_id, date)
    return (date, records) if records else (None, [])


def _by_metric(records: Iterable[GroupStatistics]) -> dict[str, dict[str, GroupStatistics]]:
    out: dict[str, dict[str, GroupStatistics]] = {}
    for r in records:
        out.setdefault(r.metricID, {})[r.groupID] = r
    return out


def _metric_key(metric: Any) -> str | None:
    if isinstance(metric, dict) and "name" in metric and "type" in metric:
        return f"{metric['name']}::{metric['type']}"
    return metric if isinstance(metric, str) else None


def _entry(record: GroupStatistics, figures: dict[str, Any]) -> dict[str, Any]:
    return {
        "metricID": record.metricID,
        "metricName": record.metricName,
        "directionality": record.directionality,
        **figures,
    }


def _no_results(date: str | None) -> str:
    if date is None:
        return "No pulse results yet: they appear after the first pulse load."
    return f"No pulse results for {date}."


# --- experiments ---------------------------------------------------------------------------------------


def _elapsed_fraction(exp: Doc, ds: str) -> float | None:
    start: float | None = exp.get("startTime")
    duration: float | None = exp.get("duration")
    if start is None or not duration:
        return None
    day_end = dt.datetime.combine(dt.date.fromisoformat(ds) + dt.timedelta(days=1), dt.time(), dt.UTC)
    elapsed_ms: float = day_end.timestamp() * 1000 - start
    return elapsed_ms / (duration * DAY_MS)


def _flag(given: bool | None, exp: Doc, field: str) -> bool:
    return bool(exp.get(field)) if given is None else given


def _priors(exp: Doc) -> dict[str, BayesianPrior]:
    out: dict[str, BayesianPrior] = {}
    for p in exp.get("bayesianPriors") or []:
        key = _metric_key(p.get("metric"))
        if key is not None:
            out[key] = BayesianPrior(float(p.get("priorMean", 0.0)), p.get("priorStdDev"))
    return out


def _sprt_settings(exp: Doc, metric_id: str, test: Doc, control_mean: float | None) -> SprtSettings | None:
    power = float(exp.get("defaultSPRTPowerParam") or 80.0) / 100.0
    mde = exp.get("defaultSPRTMDE")
    baseline: float | None = None
    for setting in exp.get("sprtMDESettings") or []:
        if setting.get("metricKey") != metric_id:
            continue
        for g in setting.get("groupSettings") or []:
            if g.get("groupKey") in (test["id"], test["name"]):
                mde = g.get("mde", mde) if g.get("mde") is not None else mde
                baseline = g.get("mean")
    if not mde or not 0.0 < power < 1.0:
        return None
    if exp.get("sprtBaselineMode") == "manual":
        if not baseline:
            return None
        return SprtSettings(mde / 100.0 * baseline, relative=False, power=power)
    if not control_mean:
        return None
    return SprtSettings(mde / 100.0, relative=True, power=power)


_SPRT_NULLS = {"sprtDecision": None, "sprtLLR": None, "sprtUpperBoundary": None, "sprtLowerBoundary": None}


def _group(exp: Doc, group_id: str, field: str) -> Doc:
    groups: list[Doc] = exp.get("groups") or []
    for g in groups:
        if g["id"] == group_id:
            return g
    names = ", ".join(repr(g["id"]) for g in groups)
    raise Invalid.field(field, f"{group_id!r} is not a group id of this experiment (its groups: {names})")


def _default_pair(exp: Doc, control_id: str | None, test_id: str | None) -> tuple[Doc, Doc]:
    """The pair asked for; unset, control is `controlGroupID` (else the first group) and test the
    one other group when there is exactly one (otherwise the 400 lists the groups to choose from)."""
    groups = exp.get("groups") or []
    if control_id is None:
        control_id = exp.get("controlGroupID") or (groups[0]["id"] if groups else "")
    control = _group(exp, control_id, "control")
    if test_id is None:
        others = [g for g in groups if g["id"] != control["id"]]
        if len(others) != 1:
            names = ", ".join(repr(g["id"]) for g in others)
            raise Invalid.field(
                "test",
                f"is required: the experiment has {len(others)} groups besides control "
                f"{control['id']!r}; choose one of {names}",
            )
        return control, others[0]
    return control, _group(exp, test_id, "test")


def experiment_results(exp_id: str, q: ExperimentResultsQuery) -> tuple[str, Doc]:
    """(message, data) of GET /experiments/{id}/pulse_results."""
    exp = experiments.effective(entities.load(kinds.EXPERIMENT, exp_id))
    return _experiment_results(exp, exp_id, q)


SERIES_FIGURES = (
    "value",
    "confidence_interval",
    "percent_change",
    "percent_confidence_interval",
    "percent_sequential_testing_confidence_interval",
    "p_value",
    "test_units",
    "control_units",
)


def experiment_results_series(exp_id: str, q: ExperimentResultsSeriesQuery) -> tuple[str, Doc]:
    """(message, data) of GET /experiments/{id}/pulse_results/days: each metric's figures on every
    computed day, exactly as pulse_results answers for that `date` with the same options (each day's
    record is cumulative, so the series is the effect as it stood at the end of each day)."""
    exp = experiments.effective(entities.load(kinds.EXPERIMENT, exp_id))
    control, test = _pair(exp, q.control, q.test)
    listed = [day.ds for day in group_stats.days(kinds.EXPERIMENT, exp_id)]
    metrics: dict[str, Doc] = {}
    computed: list[str] = []
    for day in listed:
        ds, records = _day(kinds.EXPERIMENT, exp_id, day)
        if ds is None:
            continue  # the day was replaced between listing and reading it
        day_query = ExperimentResultsQuery(**q.model_dump(), date=ds)
        data = _scorecard(exp, day_query, control, test, ds, records)
        computed.append(ds)
        for category, field in CATEGORIES:
            for entry in data[field]:
                metric = metrics.setdefault(
                    entry["metricID"],
                    {
                        "metricID": entry["metricID"],
                        "metricName": entry["metricName"],
                        "directionality": entry["directionality"],
                        "category": category,
                        "points": [],
                    },
                )
                metric["points"].append({"ds": ds, **{k: entry.get(k) for k in SERIES_FIGURES}})
    if not computed:
        return _no_results(None), {"days": [], "metrics": []}
    message = f"Pulse results of {len(computed)} day{'s' if len(computed) != 1 else ''}."
    return message, {"days": computed, "metrics": list(metrics.values())}


def _pair(exp: Doc, control_id: str | None, test_id: str | None) -> tuple[Doc, Doc]:
    control, test = _default_pair(exp, control_id, test_id)
    if control["id"] == test["id"]:
        raise Invalid.field("test", "must differ from control")
    return control, test


def _experiment_results(exp: Doc, exp_id: str, q: ExperimentResultsQuery) -> tuple[str, Doc]:
    control, test = _pair(exp, q.control, q.test)
    ds, records = _day(kinds.EXPERIMENT, exp_id, q.date)
    if ds is None:
        # The contract's `ds` is always a day: the one asked for, else today (UTC), as holdouts answer.
        empty = {"ds": q.date or today(), "primaryMetrics": [], "secondaryMetrics": [], "otherMetrics": []}
        return _no_results(q.date), empty
    return "Pulse results computed successfully.", _scorecard(exp, q, control, test, ds, records)


def _scorecard(
    exp: Doc, q: ExperimentResultsQuery, control: Doc, test: Doc, ds: str, records: Sequence[GroupStatistics]
) -> Doc:
    """The day's entries of the test group against control, with the query's options."""
    confidence = (
        q.confidence if q.confidence is not None else float(exp.get("defaultConfidenceInterval") or 95)
    )
    flags = CorrectionFlags(
        bonferroni_per_variant=_flag(q.applyBonferroniPerVariant, exp, "bonferroniCorrection"),
        bonferroni_per_metric=_flag(q.applyBonferroniPerMetric, exp, "bonferroniCorrectionPerMetric"),
        bonferroni_primary_metric_weight=q.bonferroniPrimaryMetricWeight,
        bh_per_metric=_flag(q.applyBenjaminiHochbergPerMetric, exp, "benjaminiHochbergPerMetric"),
        bh_per_variant=_flag(q.applyBenjaminiHochbergPerVariant, exp, "benjaminiHochbergPerVariant"),
        bh_primary_metrics_only=_flag(q.benjaminiPrimaryMetricsOnly, exp, "benjaminiPrimaryMetricsOnly"),
    )
    test_groups = [
        g["id"] for g in exp.get("groups") or [] if g["id"] != control["id"] and not g.get("disabled")
    ]
    if test["id"] not in test_groups:
        test_groups.append(test["id"])
    flags = dataclasses.replace(flags, test_groups=len(test_groups))
    analytics = exp.get("analyticsType") or "frequentist"
    options = ResultOptions(
        confidence=confidence,
        cuped=True if q.cuped is None else q.cuped,
        sequential=bool(exp.get("sequentialTesting")),
        elapsed_fraction=_elapsed_fraction(exp, ds),
    )

    by_metric = _by_metric(records)
    categories: dict[str, str] = {}
    for category, field in CATEGORIES:
        for metric in exp.get(field) or []:
            key = _metric_key(metric)
            if key is not None:
                categories.setdefault(key, category)
    for key in sorted(by_metric):
        categories.setdefault(key, "other")

    family_groups = test_groups if flags.bh_per_variant else [test["id"]]
    rows: list[ScorecardRow] = []
    returned: list[tuple[int, str, GroupStatistics]] = []
    for metric_id, category in categories.items():
        groups = by_metric.get(metric_id) or {}
        if control["id"] not in groups:
            continue
        c_rec = groups[control["id"]]
        c_stat = statistic_of(c_rec)
        for gid in family_groups:
            if gid not in groups:
                continue
            t_rec = groups[gid]
            if t_rec.kind != c_rec.kind or t_rec.has_pre != c_rec.has_pre:
                continue
            if gid == test["id"]:
                returned.append((len(rows), category, t_rec))
            rows.append(
                ScorecardRow(
                    metric_id,
                    gid,
                    category,  # type: ignore[arg-type]
                    statistic_of(t_rec),
                    c_stat,
                    t_rec.directionality != "decrease",
                )
            )
    results = compute_scorecard(rows, options, flags)

    priors = _priors(exp) if analytics == "bayesian" else {}
    data: Doc = {"ds": ds, "primaryMetrics": [], "secondaryMetrics": [], "otherMetrics": []}
    for index, category, t_rec in returned:
        row, result = rows[index], results[index]
        if analytics in ("bayesian", "sprt"):
            extra: dict[str, Any] = {"adjusted_alpha": result.alpha}
            if analytics == "bayesian":
                extra |= {"bayesian": True, "prior": priors.get(row.metric_id)}
            else:
                extra["sprt"] = _sprt_settings(exp, row.metric_id, test, result.raw_control.mean)
            result = experiment_result(
                row.test,
                row.control,
                dataclasses.replace(options, **extra),
                higher_is_better=row.higher_is_better,
            )
        figures = result.to_dict()
        if analytics == "sprt" and result.sprt is None:
            figures |= {**_SPRT_NULLS, "sprtMDE": None}
        data[f"{category}Metrics"].append(_entry(t_rec, figures))
    return data


# --- holdouts ----------------------------------------------------------------------------------------


def holdout_results(holdout_id: str, q: HoldoutResultsQuery) -> tuple[str, Doc]:
    """(message, data) of GET /holdouts/{id}/pulse_results."""
    holdout = entities.load(kinds.HOLDOUT, holdout_id)
    ds, records = _day(kinds.HOLDOUT, holdout_id, None)
    if ds is None:
        # The contract's `ds` is always a day: today (UTC) while nothing is computed.
        empty = {"ds": today(), "monitoringMetrics": []}
        if not holdout.get("monitoringMetrics"):
            message = (
                "This holdout has no monitoringMetrics, so there is nothing to compute: add metrics "
                "(PATCH the holdout with monitoringMetrics), then load pulse."
            )
            return message, empty
        return _no_results(None), empty
    options = ResultOptions(
        confidence=95.0 if q.confidence is None else q.confidence,
        cuped=True if q.cuped is None else q.cuped,
    )
    pass_percentage = holdout.get("passPercentage")
    by_metric = _by_metric(records)
    order = [k for k in (_metric_key(m) for m in holdout.get("monitoringMetrics") or []) if k in by_metric]
    order += sorted(set(by_metric) - set(order))
    entries = []
    for metric_id in order:
        groups = by_metric[metric_id]
        t_rec, c_rec = groups.get(HOLDOUT_TEST_GROUP), groups.get(HOLDOUT_CONTROL_GROUP)
        if t_rec is None or c_rec is None or t_rec.kind != c_rec.kind or t_rec.has_pre != c_rec.has_pre:
            continue
        result = holdout_result(
            statistic_of(t_rec),
            statistic_of(c_rec),
            options,
            pass_percentage=None if pass_percentage is None else float(pass_percentage),
            higher_is_better=t_rec.directionality != "decrease",
        )
        entries.append(_entry(t_rec, result.to_dict()))
    return "Holdout pulse results computed successfully.", {"ds": ds, "monitoringMetrics": entries}


def write_day(
    kind: str,
    entity_id: str,
    ds: str,
    records: Sequence[GroupStatistics],
    units: dict[str, int] | None = None,
) -> None:
    """Store one day's cumulative statistics (the pulse pipeline's entry point)."""
    group_stats.put_day(kind, entity_id, ds, records, units)
