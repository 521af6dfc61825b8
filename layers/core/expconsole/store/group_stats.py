"""Stored group statistics: where the pulse pipeline leaves results and the results function reads them.

Record. One item per (entity kind, entity id, date, metric id, group id) holds the metric's
sufficient statistics for that group in the stats engine's stable form
(`expconsole.models.results.GroupStatistics`): `n`, column `means`, centred `comoments`, and for
CUPED `preNonzero` (units with a non-zero pre-exposure value). Columns: a mean metric is `[x]`,
or `[x, p]` with its CUPED covariate p (the same metric over the 7 days before exposure); a ratio
metric is `[m, d]`, or `[m, d, pre m, pre d]`. The record also carries the metric's name, type
and directionality as the pipeline saw them, so a results read needs no metric reads.

Cumulative, not daily. The record for date D covers every unit exposed from the experiment's
start up to D, each unit's value over all its events from first exposure up to D (a pulse run
covers everything up to its start: docs/pulse.md, 'What a run computes'). Daily statistics
could not be merged into this:
the same unit contributes to many days, and its value over the whole window is not the sum of
per-day values once it is winsorized, turned into a 0/1 (`event_user`) or a ratio of day counts
(`event_dau`); Chan's merge is exact only for disjoint sets of units. So the pipeline recomputes
each day cumulatively (from its unit aggregates) and a results request reads ONE day: no merge.
Older days stay, which gives results "as of" any computed date (`date=`).

Key plan (the single table):

| item       | PK                    | SK                                                   | doc         |
|------------|-----------------------|------------------------------------------------------|-------------|
| statistics | `RESULTS#<KIND>#<id>` | `G#<YYYY-MM-DD>#<generation>#<metric id>#<group id>` | the record  |
| day index  | `RESULTS#<KIND>#<id>` | `DAY#<YYYY-MM-DD>`                                   | `ResultDay` |

A day's records are written as a new generation, never over the ones readers use: `put_day`
writes the statistics (BatchWriteItem, 25 a request, unprocessed items retried) under a fresh
generation id, then the day index item, whose `generation` attribute says which generation is
the day's (one PutItem: readers switch from the whole old day to the whole new one), then
deletes the generation the index pointed at before, and any other no index points at that is
older than an hour (left by an interrupted write, or by the loser of two concurrent writes of
the day; a younger one may still be being written and indexed). A write that fails part way
leaves the day index, and so every reader, on the previous complete day; a failure of that
last cleanup is only logged (a later write of the day deletes them). Records of the previous
generation that the new write does not name (a `metric` refresh writes some metrics only) are
carried over into the new one, so a day always holds every metric last computed for it.

Reading a day is the index item (GetItem) then its generation's records (one Query, paged by
DynamoDB only past 1 MB), checked against the index's `records` count: a read that raced a
cleanup reads again. The latest computed day is one Query on `begins_with(SK, "DAY#")`, newest
first, limit 1. Older days stay, which gives results "as of" any computed date (`date=`). Records
are JSON text in `doc` (as `store.dynamo` stores entities), which keeps every float exact. Day
index items written before generations existed (no `generation`) point at records keyed
`<YYYY-MM-DD>#<metric id>#<group id>`, which are read as before and replaced at the day's next
write.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from expconsole import aws, config
from expconsole.models.results import GroupStatistics, ResultDay
from expconsole.store.dynamo import StoreUnavailable

DAY_PREFIX = "DAY#"
GENERATION_PREFIX = "G#"
BATCH = 25
RETRIES = 8
READS = 3
# A generation no day index points at is deleted once older than this: by then the write that made
# it has ended (a pulse run lasts at most 15 minutes), whether it failed or lost a race.
ORPHAN_AGE_MS = 3_600_000
logger = logging.getLogger(__name__)


def _ddb() -> Any:
    return aws.client("dynamodb")


def partition(kind: str, entity_id: str) -> str:
    return f"RESULTS#{kind}#{entity_id}"


def _day_records_prefix(ds: str, generation: str | None) -> str:
    """The SK prefix of one generation of a day's records (None: the records of before generations)."""
    return f"{GENERATION_PREFIX}{ds}#{generation}#" if generation else f"{ds}#"


def record_key(record: GroupStatistics, generation: str) -> dict[str, dict[str, str]]:
    return {
        "PK": {"S": partition(record.entityKind, record.entityID)},
        "SK": {"S": f"{_day_records_prefix(record.ds, generation)}{record.metricID}#{record.groupID}"},
    }


def _batch(requests: Sequence[dict[str, Any]]) -> None:
    """BatchWriteItem, 25 a request, unprocessed items retried with backoff; StoreUnavailable past that."""
    table = config.table_name()
    for start in range(0, len(requests), BATCH):
        pending = list(requests[start : start + BATCH])
        for attempt in range(RETRIES):
            response = _ddb().batch_write_item(RequestItems={table: pending})
            pending = (response.get("UnprocessedItems") or {}).get(table) or []
            if not pending:
                break
            time.sleep(min(0.05 * 2**attempt, 1.0))
        else:
            raise StoreUnavailable(
                f"DynamoDB left {len(pending)} statistics unwritten after {RETRIES} attempts"
            )


def _batch_put(items: Sequence[dict[str, Any]]) -> None:
    _batch([{"PutRequest": {"Item": item}} for item in items])


def _day_item(kind: str, entity_id: str, ds: str) -> dict[str, Any] | None:
    response = _ddb().get_item(
        TableName=config.table_name(),
        Key={"PK": {"S": partition(kind, entity_id)}, "SK": {"S": DAY_PREFIX + ds}},
        ConsistentRead=True,
    )
    item: dict[str, Any] | None = response.get("Item")
    return item


def _generation_of(item: dict[str, Any]) -> str | None:
    generation: str | None = item.get("generation", {}).get("S")
    return generation


def put_day(
    kind: str,
    entity_id: str,
    ds: str,
    records: Sequence[GroupStatistics],
    units: Mapping[str, int] | None = None,
) -> ResultDay:
    """Write one day's cumulative statistics of an entity as a new generation, then switch the day
    to it (module docstring). Records of the day's previous generation for other (metric, group)
    pairs are carried over."""
    seen: set[tuple[str, str]] = set()
    for r in records:
        if (r.entityKind, r.entityID, r.ds) != (kind, entity_id, ds):
            raise ValueError(f"record {r.metricID}/{r.groupID} belongs to {r.entityKind} {r.entityID} {r.ds}")
        if (r.metricID, r.groupID) in seen:
            raise ValueError(f"two records for metric {r.metricID!r} and group {r.groupID!r}")
        seen.add((r.metricID, r.groupID))
    written_at = int(time.time() * 1000)
    generation = f"{written_at:013d}{secrets.token_hex(4)}"
    previous = _day_item(kind, entity_id, ds)
    stale: list[dict[str, Any]] = []  # the previous generation, and orphans old enough
    carried: list[GroupStatistics] = []
    prefixes = (
        [_day_records_prefix(ds, None)] if previous is not None and not _generation_of(previous) else []
    )
    prefixes.append(f"{GENERATION_PREFIX}{ds}#")
    current = _day_records_prefix(ds, _generation_of(previous)) if previous is not None else None
    for prefix in prefixes:
        for item in _records(kind, entity_id, prefix, projection=None):
            sk = item["SK"]["S"]
            if current is not None and sk.startswith(current):
                stale.append({"PK": item["PK"], "SK": item["SK"]})
                record = GroupStatistics.model_validate_json(item["doc"]["S"])
                if (record.metricID, record.groupID) not in seen:
                    carried.append(record)
            elif written_at - int(sk.split("#")[2][:13]) > ORPHAN_AGE_MS:
                stale.append({"PK": item["PK"], "SK": item["SK"]})
    merged = [*records, *carried]
    _batch_put([{**record_key(r, generation), "doc": {"S": r.model_dump_json()}} for r in merged])
    day = ResultDay(ds=ds, records=len(merged), units=dict(units or {}), writtenAt=written_at)
    _ddb().put_item(
        TableName=config.table_name(),
        Item={
            "PK": {"S": partition(kind, entity_id)},
            "SK": {"S": DAY_PREFIX + ds},
            "doc": {"S": day.model_dump_json()},
            "generation": {"S": generation},
        },
    )
    try:
        _batch([{"DeleteRequest": {"Key": key}} for key in stale])
    except Exception as exc:
        if not (isinstance(exc, StoreUnavailable) or aws.is_transient(exc)):
            raise
        logger.warning(
            "Deleting replaced statistics failed (the next write of the day retries): %s", aws.describe(exc)
        )
    return day


def _records(
    kind: str, entity_id: str, prefix: str, projection: str | None = "doc"
) -> Iterator[dict[str, Any]]:
    extra = {"ProjectionExpression": projection} if projection else {}
    return _query(
        KeyConditionExpression="PK = :pk AND begins_with(SK, :prefix)",
        ExpressionAttributeValues={":pk": {"S": partition(kind, entity_id)}, ":prefix": {"S": prefix}},
        ConsistentRead=True,
        **extra,
    )


def _query(**kwargs: Any) -> Iterator[dict[str, Any]]:
    request = {"TableName": config.table_name(), **kwargs}
    while True:
        page = _ddb().query(**request)
        yield from page.get("Items", [])
        last = page.get("LastEvaluatedKey")
        if not last or "Limit" in kwargs:
            return
        request["ExclusiveStartKey"] = last


def latest_day(kind: str, entity_id: str) -> ResultDay | None:
    """The newest complete day of an entity's results, or None before the first pulse load."""
    items = _query(
        KeyConditionExpression="PK = :pk AND begins_with(SK, :day)",
        ExpressionAttributeValues={":pk": {"S": partition(kind, entity_id)}, ":day": {"S": DAY_PREFIX}},
        ScanIndexForward=False,
        Limit=1,
    )
    for item in items:
        return ResultDay.model_validate_json(item["doc"]["S"])
    return None


def days(kind: str, entity_id: str) -> list[ResultDay]:
    """Every complete day, oldest first."""
    items = _query(
        KeyConditionExpression="PK = :pk AND begins_with(SK, :day)",
        ExpressionAttributeValues={":pk": {"S": partition(kind, entity_id)}, ":day": {"S": DAY_PREFIX}},
    )
    return [ResultDay.model_validate_json(item["doc"]["S"]) for item in items]


def read_day(kind: str, entity_id: str, ds: str) -> list[GroupStatistics]:
    """All statistics of one computed day (every metric and group); [] for a day not computed."""
    for _ in range(READS):
        item = _day_item(kind, entity_id, ds)
        if item is None:
            return []
        generation = _generation_of(item)
        records = [
            GroupStatistics.model_validate_json(r["doc"]["S"])
            for r in _records(kind, entity_id, _day_records_prefix(ds, generation))
        ]
        expected = ResultDay.model_validate_json(item["doc"]["S"]).records
        if generation is None or len(records) == expected:
            return records
    raise StoreUnavailable(f"the results of {ds} kept changing while they were read")
