"""Pulse loads as the API and the schedule ask for them: validate, run or queue, list history.

A load is asynchronous: `PULSE_INVOKE_ASYNC` (set on the pulse function in template.yaml)
makes `load_pulse` record a queued load and invoke the function itself with `{"pulse": ...}`
(InvocationType Event), then answer 202 at once; the run writes its progress into that record,
so `pulse_load_history` shows it `running` with `progress` until it finishes. The local server
does the same (it passes the function its variables and serves Lambda's Invoke API:
local/lambda_api.py). `?wait=true` runs the load within the request instead, and the answer
carries its outcome. The pipeline itself (services.pulse.run, DuckDB, no numpy) is imported
only when a load runs.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

from expconsole import aws, kinds, observability
from expconsole.days import ds_of
from expconsole.errors import DomainError, Invalid, Unavailable
from expconsole.models.pagination import Page, page_of
from expconsole.models.pulse import LoadPulseBody, PulseLoadRecord
from expconsole.observability import MetricUnit
from expconsole.services import entities, experiments
from expconsole.services.common import lifecycle
from expconsole.services.pulse.plan import experiment_metric_ids
from expconsole.store import dynamo, pulse_runs

logger = observability.logger
ASYNC_ENV = "PULSE_INVOKE_ASYNC"


def _async() -> bool:
    return os.environ.get(ASYNC_ENV, "").lower() == "true" and bool(
        os.environ.get("AWS_LAMBDA_FUNCTION_NAME")
    )


def request(
    exp_id: str, body: LoadPulseBody, kind: str = kinds.EXPERIMENT, wait: bool = False
) -> tuple[str, dict[str, Any], bool]:
    """Load (or queue) pulse for one experiment or holdout; (message, the load's history record,
    whether it was queued). `wait` runs it within the request, as scripts may want."""
    if kind == kinds.HOLDOUT:
        doc = entities.load(kinds.HOLDOUT, exp_id)
        metric_ids = experiment_metric_ids({"primaryMetrics": doc.get("monitoringMetrics") or []})
        if not metric_ids:
            raise Invalid.field(
                "monitoringMetrics",
                "the holdout has no monitoring metrics, so a load has nothing to compute: add some first",
            )
        doc = {**doc, "startTime": doc.get("createdTime")}
    else:
        doc = experiments.effective(entities.load(kinds.EXPERIMENT, exp_id))
        metric_ids = experiment_metric_ids(doc)
    if doc.get("startTime") is None:
        raise Invalid.field("id", "the experiment has not started: start it before loading pulse")
    what = kinds.LABEL[kind].lower()
    if body.refresh == "metric":
        if not body.metricIDs:
            raise Invalid.field("metricIDs", "is required with refresh 'metric': the metrics to reload")
        unknown = sorted(set(body.metricIDs) - set(metric_ids))
        if unknown:
            raise Invalid.field("metricIDs", f"not metrics of this {what}: {', '.join(unknown)}")
    job: dict[str, Any] = {
        "kind": kind,
        "id": exp_id,
        "refresh": body.refresh,
        "metricIDs": body.metricIDs,
        "turboMode": body.turboMode,
        "creator": _creator(),
        "runID": uuid.uuid4().hex[:12],
        "createdTime": entities.now_ms(),
    }
    if _async() and not wait:
        record = _queued_record(doc, job)
        job["record"] = record.doc()
        pulse_runs.put(kind, exp_id, job["runID"], record.doc())
        _invoke(job)
        where = f"{kinds.LABEL[kind].lower()}s/{exp_id}/pulse_load_history"
        message = f"{kinds.LABEL[kind]} is loading: follow it in {where} (running, progress)."
        return message, record.presented(), True
    return "Pulse loaded.", _run(job).presented(), False


def _creator() -> str:
    from expconsole import context

    caller = context.current()
    return f"Console API ({caller.key_id})" if caller and caller.key_id else "Console API"


def _queued_record(doc: dict[str, Any], job: dict[str, Any]) -> PulseLoadRecord:
    day = ds_of(job["createdTime"])
    start = ds_of(doc["startTime"])
    return PulseLoadRecord(
        creatorName=job["creator"],
        createdTime=job["createdTime"],
        finishedTime=None,
        finishedState=None,
        startDs=start,
        endDs=day,
        reloadType=job["refresh"],
        turboMode=job["turboMode"],
    )


PROGRESS_EVERY_S = 1.0


def _progress_writer(job: dict[str, Any]) -> Callable[[str, int, int], None] | None:
    """A progress callback for the pipeline that records the step in the queued load's history
    record (at most once a second): what `pulse_load_history` shows while it runs."""
    if not job.get("record"):
        return None
    queued = PulseLoadRecord.read(job["record"])
    last = [0.0]

    def progress(step: str, done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] < PROGRESS_EVERY_S and done < total:
            return
        last[0] = now
        record = queued.with_progress(step, done, total)
        pulse_runs.put(job["kind"], job["id"], job["runID"], record.doc())

    return progress


def _invoke(job: dict[str, Any]) -> None:
    try:
        aws.client("lambda").invoke(
            FunctionName=os.environ["AWS_LAMBDA_FUNCTION_NAME"],
            InvocationType="Event",
            Payload=json.dumps({"pulse": job}).encode(),
        )
    except Exception as exc:
        logger.warning("Queueing a pulse load failed", exc_info=True)
        raise Unavailable("The load could not be queued; retry.") from exc


def _run(job: dict[str, Any]) -> PulseLoadRecord:
    from botocore.exceptions import BotoCoreError, ClientError

    from expconsole.services.pulse import run

    started = time.monotonic()
    try:
        record = run.load(
            job["kind"],
            job["id"],
            refresh=job.get("refresh", "full"),
            metric_ids=job.get("metricIDs"),
            turbo=bool(job.get("turboMode")),
            creator=job.get("creator", "Console API"),
            run_id=job.get("runID"),
            created=job.get("createdTime"),
            progress=_progress_writer(job),
        )
    except (BotoCoreError, ClientError) as exc:
        observability.count("PulseRunsFailed")
        logger.warning("Storage failed during a pulse load", exc_info=True)
        raise Unavailable("Storage failed during the load; retry it.") from exc
    observability.count("PulseRunDuration", (time.monotonic() - started) * 1000, MetricUnit.Milliseconds)
    if record.finishedState != "success":
        observability.count("PulseRunsFailed")
    return record


def run_queued(job: dict[str, Any]) -> dict[str, Any]:
    """A queued load (async invocation): run it; failures are in its history record."""
    try:
        return _run(job).doc()
    except Exception:
        logger.exception("Pulse load failed", extra={"kind": job.get("kind"), "id": job.get("id")})
        return {"finishedState": "failure"}


def history(exp_id: str, page: int, limit: int, kind: str = kinds.EXPERIMENT) -> Page[Any]:
    entities.load(kind, exp_id)
    runs = [PulseLoadRecord.read(doc).presented() for doc in pulse_runs.list_runs(kind, exp_id)]
    return page_of(runs, page=page, limit=limit)


def due(now_ms: int, every_hour: bool = False) -> list[tuple[str, str]]:
    """(kind, id) of what the hourly schedule loads now: running experiments whose reload hour
    (UTC, null = every hour) and days (0 = Sunday, null = every day) match, and enabled holdouts.
    `every_hour` (the CLI) takes every running experiment whatever its schedule."""
    moment = dt.datetime.fromtimestamp(now_ms / 1000, dt.UTC)
    weekday = (moment.weekday() + 1) % 7  # Monday 0 in Python; Sunday 0 in the contract
    out = []
    for doc in dynamo.list_all(kinds.EXPERIMENT):
        doc = experiments.effective(doc, now_ms)
        if doc.get("status") not in experiments.RUNNING or doc.get("startTime") is None:
            continue
        if lifecycle.is_archived(doc):
            continue
        hour, days = doc.get("scheduledReloadHour"), doc.get("scheduledReloadDays")
        if every_hour or ((hour is None or hour == moment.hour) and (days is None or weekday in days)):
            out.append((kinds.EXPERIMENT, doc["id"]))
    for doc in dynamo.list_all(kinds.HOLDOUT):
        if doc.get("isEnabled", True) and not lifecycle.is_archived(doc):
            out.append((kinds.HOLDOUT, doc["id"]))
    return out


def compaction_due(targets: list[tuple[str, str]], now_ms: int) -> list[str]:
    """The finished days these loads read that hold raw objects not yet compacted to Parquet.

    None on Athena: it reads the raw partitions through the Glue table, never the Parquet files."""
    from expconsole.services.pulse import athena, compaction, run

    if athena.enabled():
        return []
    plans = []
    for kind, entity_id in targets:
        try:
            plans.append(run.plan_for(kind, entity_id, now_ms))
        except DomainError:  # deleted or changed since it was found due: its load reports it
            continue
    return compaction.pending_days(compaction.read_days(plans, now_ms))


def compact(job: dict[str, Any]) -> dict[str, Any]:
    """A queued compaction (async invocation `{"compact": {"days": [...]}}`): the days it wrote."""
    from expconsole.services.pulse import compaction

    started = time.monotonic()
    written = compaction.compact_days(job.get("days") or [], entities.now_ms())
    observability.count("DaysCompacted", len(written))
    observability.count("CompactionDuration", (time.monotonic() - started) * 1000, MetricUnit.Milliseconds)
    return {"compacted": written}


def _invoke_compaction(days: list[str]) -> None:
    """Queue (AWS) or run the compaction of `days`, a batch per invocation."""
    from expconsole.services.pulse import compaction

    for batch in compaction.batches(days):
        if _async():
            aws.client("lambda").invoke(
                FunctionName=os.environ["AWS_LAMBDA_FUNCTION_NAME"],
                InvocationType="Event",
                Payload=json.dumps({"compact": {"days": batch}}).encode(),
            )
        else:
            compact({"days": batch})


def scheduled(time_text: str | None = None) -> dict[str, Any]:
    """The hourly schedule: queue (AWS) or run every due load incrementally, then the compaction of
    the finished days they read (services/pulse/compaction.py: beside the loads, not in them)."""
    now = entities.now_ms()
    if time_text:
        parsed = dt.datetime.fromisoformat(time_text.replace("Z", "+00:00"))
        now = int(parsed.timestamp() * 1000)
    done, failed = [], []
    queue = due(now)
    observability.count("PulseLoadsScheduled", len(queue))  # zero is a datum too: the hour ran
    for kind, entity_id in queue:
        job = {
            "kind": kind,
            "id": entity_id,
            "refresh": "incremental",
            "creator": "Scheduled reload",
            "runID": uuid.uuid4().hex[:12],
            "createdTime": entities.now_ms(),
        }
        try:
            _invoke(job) if _async() else _run(job)
            done.append(entity_id)
        except Exception:
            logger.exception("Scheduled pulse load failed", extra={"kind": kind, "id": entity_id})
            failed.append(entity_id)
    compacting: list[str] = []
    try:
        compacting = compaction_due(queue, now)
        _invoke_compaction(compacting)
    except Exception:  # the loads read raw objects as well: the next hour tries again
        logger.exception("Scheduled compaction failed", extra={"days": compacting})
        observability.count("CompactionsFailed")
    return {"loaded": done, "failed": failed, "compacting": compacting}
