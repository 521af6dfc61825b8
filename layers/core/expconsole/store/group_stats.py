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
covers everything up to its start, DESIGN.md). Daily statistics could not be merged into this:
the same unit contributes to many days, and its value over the whole window is not the sum of
per-day values once it is winsorized, turned into a 0/1 (`event_user`) or a ratio of day counts
(`event_dau`); Chan's merge is exact only for disjoint sets of units. So the pipeline recomputes
each day cumulatively (from its unit aggregates) and a results request reads ONE day: no merge.
Older days stay, which gives results "as of" any computed date (`date=`).

Key plan (the single table):

| item            | PK                         | SK                                   | doc           |
|-----------------|----------------------------|--------------------------------------|---------------|
| statistics      | `RESULTS#<KIND>#<id>`      | `<YYYY-MM-DD>#<metric id>#<group id>`| the record    |
| day index       | `RESULTS#<KIND>#<id>`      | `DAY#<YYYY-MM-DD>`                   | `ResultDay`   |

A day's results are one Query (`begins_with(SK, "<date>#")`); the latest computed day is one
Query on `begins_with(SK, "DAY#")`, newest first, limit 1. `put_day` writes the statistics
first (BatchWriteItem, 25 a request, unprocessed items retried) and the day index item last, so
the latest day found is always a complete one; re-running a day overwrites its items. Records are
JSON text in `doc` (as `store.dynamo` stores entities), which keeps every float exact.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from expconsole import aws, config
from expconsole.models.results import GroupStatistics, ResultDay

DAY_PREFIX = "DAY#"
BATCH = 25
RETRIES = 8


def _ddb() -> Any:
    return aws.client("dynamodb")


def partition(kind: str, entity_id: str) -> str:
    return f"RESULTS#{kind}#{entity_id}"


def record_key(record: GroupStatistics) -> dict[str, dict[str, str]]:
    return {
        "PK": {"S": partition(record.entityKind, record.entityID)},
        "SK": {"S": f"{record.ds}#{record.metricID}#{record.groupID}"},
    }


def _batch_put(items: Sequence[dict[str, Any]]) -> None:
    table = config.table_name()
    for start in range(0, len(items), BATCH):
        requests = [{"PutRequest": {"Item": item}} for item in items[start : start + BATCH]]
        for attempt in range(RETRIES):
            response = _ddb().batch_write_item(RequestItems={table: requests})
            requests = (response.get("UnprocessedItems") or {}).get(table) or []
            if not requests:
                break
            time.sleep(min(0.05 * 2**attempt, 1.0))
        else:
            raise RuntimeError(f"DynamoDB left {len(requests)} statistics unwritten after {RETRIES} attempts")


def put_day(
    kind: str,
    entity_id: str,
    ds: str,
    records: Sequence[GroupStatistics],
    units: Mapping[str, int] | None = None,
) -> ResultDay:
    """Write one day's cumulative statistics of an entity, then mark the day complete."""
    seen: set[tuple[str, str]] = set()
    for r in records:
        if (r.entityKind, r.entityID, r.ds) != (kind, entity_id, ds):
            raise ValueError(f"record {r.metricID}/{r.groupID} belongs to {r.entityKind} {r.entityID} {r.ds}")
        if (r.metricID, r.groupID) in seen:
            raise ValueError(f"two records for metric {r.metricID!r} and group {r.groupID!r}")
        seen.add((r.metricID, r.groupID))
    items = [{**record_key(r), "doc": {"S": r.model_dump_json()}} for r in records]
    _batch_put(items)
    day = ResultDay(ds=ds, records=len(records), units=dict(units or {}), writtenAt=int(time.time() * 1000))
    _ddb().put_item(
        TableName=config.table_name(),
        Item={
            "PK": {"S": partition(kind, entity_id)},
            "SK": {"S": DAY_PREFIX + ds},
            "doc": {"S": day.model_dump_json()},
        },
    )
    return day


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
    """All statistics of one day (every metric and group): one Query, paged by DynamoDB only past 1 MB."""
    items = _query(
        KeyConditionExpression="PK = :pk AND begins_with(SK, :day)",
        ExpressionAttributeValues={":pk": {"S": partition(kind, entity_id)}, ":day": {"S": f"{ds}#"}},
        ProjectionExpression="doc",
    )
    return [GroupStatistics.model_validate_json(item["doc"]["S"]) for item in items]
