"""One pulse run for an experiment or holdout: days → aggregates → statistics → health → history.

A run analyses everything up to its own start (today's partial day included), or up to the end
of `as_of` (the CLI's `--date`), and never past the experiment's end or decision. Days run from
7 days before the start (the CUPED pre-period) to that cutoff. Per day:

1. its unit aggregate is reused when stored with the same plan fingerprint, the same set of raw
   objects and the same cutoff (`incremental`, the scheduled runs), else computed from the
   day's events (its compacted Parquet file plus the raw objects not in it: a run never
   compacts, compaction.py does, apart) and stored under `pulse/<kind>=<id>/date=D/` (`full`
   recomputes every day);
2. the combination (analyse.py) gives cumulative records per result day, written through
   store.group_stats.put_day, and the health checks, stored on the experiment (`_health`).

`refresh=metric` writes only the records of `metricIDs`. The run's history record is written
when it starts (`running`) and when it ends (`success` or `failure`, with the reason).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from aws_lambda_powertools import Logger

from expconsole import aws, kinds
from expconsole.days import ds_of
from expconsole.errors import DomainError
from expconsole.models.pulse import (
    ExposureBalanceMetadata,
    HasChecksMetadata,
    HealthStatus,
    MetricDates,
    MetricsMetadata,
    PulseHealth,
    PulseHealthCheck,
    PulseLoadRecord,
    ReloadType,
    SrmGroup,
    SrmMetadata,
)
from expconsole.services import entities, event_names
from expconsole.services.pulse import athena, daydata, engine
from expconsole.services.pulse.aggregate import PARTS, DayEvents, aggregate_day
from expconsole.services.pulse.analyse import Analysis, AnalysisHealth, ExposureCounts, Parts, analyse
from expconsole.services.pulse.plan import DAY_MS, PRE_DAYS, EntityPlan, experiment_plan, holdout_plan
from expconsole.store import dynamo, pulse_runs, s3
from expconsole.store.group_stats import put_day

logger = Logger(service="expconsole")
Progress = Callable[[str, int, int], None]


def _day_start(ds: str) -> int:
    return int(dt.datetime.fromisoformat(ds).replace(tzinfo=dt.UTC).timestamp() * 1000)


def day_range(first: str, last: str) -> list[str]:
    a, b = dt.date.fromisoformat(first), dt.date.fromisoformat(last)
    return [(a + dt.timedelta(days=i)).isoformat() for i in range((b - a).days + 1)]


def aggregate_prefix(plan: EntityPlan, ds: str) -> str:
    return f"{s3.PULSE_PREFIX}{plan.kind.lower()}={plan.id}/date={ds}/"


def plan_for(kind: str, entity_id: str, now: int) -> EntityPlan:
    doc = entities.load(kind, entity_id)
    return experiment_plan(doc, now) if kind == kinds.EXPERIMENT else holdout_plan(doc)


@dataclasses.dataclass
class _Day:
    """What a day's aggregate needs, read from storage before DuckDB starts on it (`_prepare`)."""

    ds: str
    listed: daydata.Listing
    stamp: dict[str, Any]
    stored: dict[str, Any] | None  # the stored aggregate's manifest, when its stamp matches


def _prepare(
    spill: engine.Spill,
    plan: EntityPlan,
    ds: str,
    cutoff: int,
    refresh: str,
    exposure_cutoff: int | None = None,
) -> _Day:
    """List the day, read its manifests and fetch the objects its aggregate will read.

    Storage only (no DuckDB): the run does this for the next day in a thread while DuckDB
    aggregates the current one. Events before `cutoff` are aggregated; exposures up to
    `exposure_cutoff` are read (after a decision, to count the exposures that came after it)."""
    keys = daydata.raw_keys(ds)
    on_athena = athena.enabled()  # Athena reads the raw partitions through the Glue table
    listed = daydata.Listing(keys, None) if on_athena else daydata.listing(ds, keys)
    exposure_cutoff = cutoff if exposure_cutoff is None else max(cutoff, exposure_cutoff)
    stamp = {
        "fingerprint": plan.fingerprint(),
        "sources": daydata.sources_digest(keys),
        "cutoff": cutoff,
        "exposureCutoff": exposure_cutoff,
    }
    prefix = aggregate_prefix(plan, ds)
    stored = None
    if refresh != "full":
        body = s3.get_if_exists(prefix + "_manifest.json")
        manifest = json.loads(body) if body else None
        if manifest is not None and all(manifest.get(k) == v for k, v in stamp.items()):
            stored = manifest
    if stored is not None:
        spill.fetch([f"{prefix}{name}.parquet" for name in PARTS])
    elif not on_athena:
        listed = daydata.fetch(spill, ds, listed)
    return _Day(ds, listed, stamp, stored)


def _day_parts(
    con: Any, spill: engine.Spill, plan: EntityPlan, day: _Day
) -> tuple[Parts, ExposureCounts, bool]:
    """The day's aggregate (local Parquet parts), its exposure counts, and whether it was recomputed:
    the stored aggregate when its stamp matches (not `full`), else the day's aggregate computed."""
    ds, keys, stamp = day.ds, day.listed.keys, day.stamp
    prefix = aggregate_prefix(plan, ds)
    cutoff, exposure_cutoff = stamp["cutoff"], stamp["exposureCutoff"]
    if day.stored is not None:
        files = spill.fetch([f"{prefix}{name}.parquet" for name in PARTS])
        return dict(zip(PARTS, files, strict=True)), day.stored["health"], False
    if athena.enabled():
        agg, scanned = athena.aggregate_day(con, spill, plan, ds, spill.path(prefix), cutoff, exposure_cutoff)
        logger.info("Athena day aggregate", extra={"day": ds, "bytesScanned": scanned})
    else:
        select = daydata.day_select(spill, ds, keys, day.listed)[0]
        agg = aggregate_day(plan, DayEvents(con, select, spill.path(prefix)), cutoff, exposure_cutoff)
    for name, path in agg.files.items():
        spill.adopt(f"{prefix}{name}.parquet")
        with open(path, "rb") as body_file:
            s3.put_file(f"{prefix}{name}.parquet", body_file, "application/vnd.apache.parquet")
    s3.put_object(
        prefix + "_manifest.json", json.dumps({**stamp, "health": agg.health}).encode(), "application/json"
    )
    # The day's raw and compacted copies are not read again in this run.
    spill.forget(keys)
    spill.forget_under(daydata.compacted_prefix(ds))
    return agg.files, agg.health, True


def execute(
    plan: EntityPlan,
    *,
    now: int,
    as_of: str | None = None,
    refresh: str = "full",
    metric_ids: set[str] | None = None,
    progress: Progress | None = None,
) -> tuple[Analysis, list[str]]:
    """Aggregate and analyse the plan's days; write the records. Returns the analysis and result days."""
    cutoff = now
    if plan.end_ms is not None:
        cutoff = min(cutoff, plan.end_ms)
    if as_of is not None:
        cutoff = min(cutoff, _day_start(as_of) + DAY_MS)
    if cutoff <= plan.start_ms:
        return Analysis([], None), []
    start_ds = ds_of(plan.start_ms)
    first = (dt.date.fromisoformat(start_ds) - dt.timedelta(days=PRE_DAYS)).isoformat()
    days = day_range(first, ds_of(cutoff - 1))
    # After a decision, exposures keep being read up to the run's own end: the health checks
    # count those that came after it (they expose nobody). Days past the decision day are
    # read for that alone.
    exposure_end = cutoff
    if plan.decision_ms is not None:
        exposure_end = max(cutoff, now if as_of is None else min(now, _day_start(as_of) + DAY_MS))
    health_days = day_range(ds_of(cutoff - 1), ds_of(exposure_end - 1))[1:]
    with engine.Spill() as spill:
        con = engine.connect(spill.duckdb)
        try:
            analysis = _execute_days(
                con,
                spill,
                plan,
                days,
                health_days,
                cutoff,
                exposure_end,
                refresh,
                metric_ids,
                progress,
            )
        finally:
            con.close()
    for day in analysis.days:
        put_day(plan.kind, plan.id, day.ds, day.records, day.units)
    if progress:
        progress("done", 1, 1)
    return analysis, [d.ds for d in analysis.days]


def _execute_days(
    con: Any,
    spill: engine.Spill,
    plan: EntityPlan,
    days: list[str],
    health_days: list[str],
    cutoff: int,
    exposure_end: int,
    refresh: str,
    metric_ids: set[str] | None,
    progress: Progress | None,
) -> Analysis:
    """Each day's aggregate (computed or reused), then the combination into records."""
    parts: list[Parts] = []
    healths: list[ExposureCounts] = []
    extra_healths: list[ExposureCounts] = []
    total = len(days) * 2 - PRE_DAYS + len(health_days)
    all_days = days + health_days

    def prepare(ds: str) -> _Day:
        day_end = _day_start(ds) + DAY_MS
        return _prepare(spill, plan, ds, min(cutoff, day_end), refresh, min(exposure_end, day_end))

    # One day ahead: the next day's listing, manifests and downloads overlap this day's DuckDB work.
    with ThreadPoolExecutor(max_workers=1) as ahead:
        upcoming = ahead.submit(prepare, all_days[0]) if all_days else None
        for i, ds in enumerate(all_days):
            if progress:
                progress(f"events {ds}", i, total)
            assert upcoming is not None
            day = upcoming.result()
            upcoming = ahead.submit(prepare, all_days[i + 1]) if i + 1 < len(all_days) else None
            p, h, _ = _day_parts(con, spill, plan, day)
            if i < len(days):
                parts.append(p)
                healths.append(h)
            else:
                extra_healths.append(h)
    step = [len(days) + len(health_days)]

    def analysed(ds: str) -> None:
        if progress:
            progress(f"results {ds}", step[0], total)
        step[0] += 1

    analysis = analyse(con, plan, days, parts, healths, PRE_DAYS, metric_ids, analysed)
    if analysis.health is None:
        return analysis
    return dataclasses.replace(analysis, health=analysis.health.with_exposures(extra_healths))


def _previous_metric_dates(previous: PulseHealth | None) -> tuple[dict[str, tuple[Any, Any]], set[str]]:
    """(metric -> (earliest, latest), missing metrics) of a stored health document."""
    meta = previous.metrics_check() if previous is not None else None
    if meta is None:
        return {}, set()
    return {m.metric_name: (m.earliest_date, m.latest_date) for m in meta.metrics}, set(meta.missingMetrics)


_SRM_STATUS: dict[str, HealthStatus] = {"pass": "PASSED", "warn": "WARNING", "fail": "FAILED"}


def health_doc(
    plan: EntityPlan, h: AnalysisHealth, now: int, previous: PulseHealth | None = None
) -> PulseHealth:
    """`healthCheckStatus` and `healthChecks` (the contract's shape) from the latest analysis.

    Metrics the analysis did not compute (a `metric` refresh) keep what `previous` (the stored
    health document) said of them."""
    units = h.units
    total = sum(units.values())
    groups = h.groups
    sizes = sum(float(g.size or 0) for g in groups) or 1.0
    exposures = h.exposures
    invalid = sum(exposures.get(k, 0) for k in ("unknownGroup", "disabledGroup", "afterDecision"))
    all_exposures = invalid + exposures.get("valid", 0)
    exposed = h.exposed_units
    crossover = 100.0 * h.crossover_units / exposed if exposed else 0.0
    empty_group = total >= 100 and any(units.get(g.id, 0) == 0 for g in groups)
    balance: HealthStatus = (
        "FAILED"
        if empty_group
        else (
            "WARNING" if crossover > 1.0 or (all_exposures and invalid / all_exposures > 0.01) else "PASSED"
        )
    )
    dates: dict[str, tuple[Any, Any]] = dict(h.metric_dates)
    missing = list(h.missing_metrics)
    old_dates, old_missing = _previous_metric_dates(previous)
    for m in plan.metrics:
        if m.id not in dates and m.id not in missing:
            if m.id in old_dates:
                dates[m.id] = old_dates[m.id]
            if m.id in old_missing or m.id not in old_dates:
                missing.append(m.id)
    dates = {m.id: dates[m.id] for m in plan.metrics if m.id in dates}
    missing = [m.id for m in plan.metrics if m.id in missing]
    checks = [
        PulseHealthCheck(
            name="Pulse loaded",
            description=f"{exposed} units exposed up to {h.ds}." if total else "No exposures yet.",
            status="PASSED",
            type="has_checks",
            metadata=HasChecksMetadata(
                primary_id_type=plan.id_type, lastPulseLoadTime=now, lastUpdatedDs=h.ds
            ),
        ),
        PulseHealthCheck(
            name="Sample ratio",
            description="Chi-squared test of the units per group against the configured sizes.",
            status=_SRM_STATUS.get(h.srm_status, "PASSED"),
            type="srm",
            metadata=SrmMetadata(
                p_value=h.srm_p_value,
                groups=[
                    SrmGroup(
                        groupID=g.id,
                        groupName=g.name,
                        units=units.get(g.id, 0),
                        expectedPercent=100.0 * float(g.size or 0) / sizes,
                        observedPercent=100.0 * units.get(g.id, 0) / total if total else None,
                    )
                    for g in groups
                ],
            ),
        ),
        PulseHealthCheck(
            name="Exposure balance",
            description="Every enabled group gets units; few cross groups or have bad exposures.",
            status=balance,
            type="exposure_balance",
            metadata=ExposureBalanceMetadata(
                crossoverPercent=crossover,
                unknownGroupExposures=exposures.get("unknownGroup", 0),
                disabledGroupExposures=exposures.get("disabledGroup", 0),
                exposuresAfterDecision=exposures.get("afterDecision", 0),
                validExposures=exposures.get("valid", 0),
            ),
        ),
        PulseHealthCheck(
            name="Metrics",
            description="Metrics with data, and the first and last day each had any.",
            status="WARNING" if missing else "PASSED",
            type="metrics",
            metadata=MetricsMetadata(
                missingMetrics=missing,
                metrics=[
                    MetricDates(metric_name=mid, earliest_date=first, latest_date=last)
                    for mid, (first, last) in dates.items()
                ],
            ),
        ),
    ]
    statuses = {c.status for c in checks}
    status: HealthStatus = (
        "FAILED" if "FAILED" in statuses else "WARNING" if "WARNING" in statuses else "PASSED"
    )
    return PulseHealth(status=status, checks=checks)


def _failure_message(exc: Exception) -> str:
    """What the history shows of a failure: the rule broken, never storage internals (names, ARNs)."""
    if isinstance(exc, DomainError):
        return exc.message
    if isinstance(exc, athena.AthenaError):
        return str(exc)
    if aws.is_transient(exc) or type(exc).__name__ == "StoreUnavailable":
        return "Storage was unavailable during the load; retry it."
    return "The load failed with an internal error; it was logged. Retry, and report it if it persists."


def load_pulse(
    kind: str,
    entity_id: str,
    *,
    refresh: ReloadType = "full",
    metric_ids: list[str] | None = None,
    turbo: bool = False,
    creator: str = "Console API",
    as_of: str | None = None,
    now: int | None = None,
    progress: Progress | None = None,
    run_id: str | None = None,
    created: int | None = None,
) -> dict[str, Any]:
    """`load`, its history record as stored (the CLI prints it)."""
    return load(
        kind,
        entity_id,
        refresh=refresh,
        metric_ids=metric_ids,
        turbo=turbo,
        creator=creator,
        as_of=as_of,
        now=now,
        progress=progress,
        run_id=run_id,
        created=created,
    ).doc()


def load(
    kind: str,
    entity_id: str,
    *,
    refresh: ReloadType = "full",
    metric_ids: list[str] | None = None,
    turbo: bool = False,
    creator: str = "Console API",
    as_of: str | None = None,
    now: int | None = None,
    progress: Progress | None = None,
    run_id: str | None = None,
    created: int | None = None,
) -> PulseLoadRecord:
    """Run the pipeline for one entity, recording it in the load history; the history record.

    `run_id`/`created` continue a queued load's record (services.pulse_loads) instead of adding one.
    """
    now = entities.now_ms() if now is None else now
    plan = plan_for(kind, entity_id, now)
    run_id = run_id or uuid.uuid4().hex[:12]
    end = min(now, plan.end_ms or now)
    if as_of is not None:
        end = min(end, _day_start(as_of) + DAY_MS - 1)
    record = PulseLoadRecord(
        creatorName=creator,
        createdTime=created or now,
        finishedTime=None,
        finishedState=None,
        startDs=ds_of(plan.start_ms),
        endDs=ds_of(max(end, plan.start_ms)),
        reloadType=refresh,
        turboMode=turbo,
    )
    pulse_runs.put(kind, entity_id, run_id, record.doc())
    try:
        analysis, result_days = execute(
            plan,
            now=now,
            as_of=as_of,
            refresh=refresh,
            metric_ids=set(metric_ids) if refresh == "metric" and metric_ids else None,
            progress=progress,
        )
        if kind == kinds.EXPERIMENT and result_days and analysis.health is not None:
            previous = (
                PulseHealth.read((dynamo.get(kind, entity_id) or {}).get("_health"))
                if refresh == "metric" and metric_ids
                else None
            )
            health = health_doc(plan, analysis.health, now, previous)
            health = event_names.amend_health(health, [m.id for m in plan.metrics])
            dynamo.set_internal(kind, entity_id, "_health", health.doc())
        record = record.finished("success", _now_ms(), end_ds=result_days[-1] if result_days else None)
    except Exception as exc:
        record = record.finished("failure", _now_ms(), message=_failure_message(exc))
        logger.exception("Pulse load failed", extra={"kind": kind, "id": entity_id, "run": run_id})
        with contextlib.suppress(Exception):  # the failure itself may be the table: keep the cause
            pulse_runs.put(kind, entity_id, run_id, record.doc())
        raise
    pulse_runs.put(kind, entity_id, run_id, record.doc())
    return record


def _now_ms() -> int:
    return int(time.time() * 1000)
