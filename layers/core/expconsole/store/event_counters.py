"""Per-day, per-event-name counters in the single table, counted once per event object.

| item            | PK                | SK                     | GSI1PK             | GSI1SK       |
|-----------------|-------------------|------------------------|--------------------|--------------|
| day counter     | `EVENTS#<date>`   | `<event name>`         | `EVENTNAME#<name>` | `<date>`     |
| object marker   | `EVENTOBJ#<date>` | `<object name>#<n>`    |                    |              |

A counter holds `count` (ADD), `firstSeen` (if_not_exists) and `lastSeen` (SET; receipt
times, ms) and `metadataKeys` (a string set, ADD). GSI1 gives every day of one event name in
one query (the summary).

Once per object: the counter updates of one event object go in one DynamoDB transaction with
a conditional write of the object's marker (`attribute_not_exists`). A retried request writes
the same object key, its marker exists, the transaction is cancelled and nothing is counted
twice; a failed transaction counts nothing, so a retry counts it then. A transaction holds 100
items, so an object naming more than 99 event names is counted in chunks of 99 names (sorted,
so a retry chunks alike), each with its own marker `<object name>#<chunk>`. Every write is an
UpdateItem (the function's only write permission).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from expconsole import aws, config
from expconsole.store import dynamo
from expconsole.store.dynamo import GSI1

CHUNK = 99
MAX_METADATA_KEYS = 100  # per object and name; longer key names are not recorded
MAX_METADATA_KEY_CHARS = 128


@dataclass
class NameTally:
    count: int = 0
    metadata_keys: set[str] = field(default_factory=set)


def _ddb() -> Any:
    return aws.client("dynamodb")


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _counter_update(table: str, day: str, name: str, tally: NameTally, now_ms: int) -> dict[str, Any]:
    expression = (
        "ADD #c :n SET firstSeen = if_not_exists(firstSeen, :now), lastSeen = :now, GSI1PK = :g, GSI1SK = :d"
    )
    values: dict[str, Any] = {
        ":n": {"N": str(tally.count)},
        ":now": {"N": str(now_ms)},
        ":g": _s(f"EVENTNAME#{name}"),
        ":d": _s(day),
    }
    keys = sorted(k for k in tally.metadata_keys if len(k) <= MAX_METADATA_KEY_CHARS)[:MAX_METADATA_KEYS]
    if keys:
        expression = expression.replace("ADD #c :n", "ADD #c :n, metadataKeys :k")
        values[":k"] = {"SS": keys}
    return {
        "Update": {
            "TableName": table,
            "Key": {"PK": _s(f"EVENTS#{day}"), "SK": _s(name)},
            "UpdateExpression": expression,
            "ExpressionAttributeNames": {"#c": "count"},
            "ExpressionAttributeValues": values,
        }
    }


def record(day: str, object_name: str, tallies: dict[str, NameTally], now_ms: int) -> int:
    """Count one object's events once; the number of chunks counted now (0: all counted before)."""
    from botocore.exceptions import ClientError

    table = config.table_name()
    names = sorted(tallies)
    counted = 0
    for chunk_index, start in enumerate(range(0, len(names), CHUNK)):
        marker = {
            "Update": {
                "TableName": table,
                "Key": {"PK": _s(f"EVENTOBJ#{day}"), "SK": _s(f"{object_name}#{chunk_index}")},
                "UpdateExpression": "SET countedAt = :now",
                "ConditionExpression": "attribute_not_exists(PK)",
                "ExpressionAttributeValues": {":now": {"N": str(now_ms)}},
            }
        }
        items = [marker] + [
            _counter_update(table, day, name, tallies[name], now_ms) for name in names[start : start + CHUNK]
        ]
        for attempt in range(dynamo.CONFLICT_RETRIES + 1):
            try:
                _ddb().transact_write_items(TransactItems=items)
                counted += 1
            except ClientError as exc:
                if dynamo.is_transient_cancellation(exc) and attempt < dynamo.CONFLICT_RETRIES:
                    dynamo.conflict_pause(attempt)  # a concurrent count of the same names, or throttling
                    continue
                if not marker_exists(exc):
                    raise
            break
    return counted


def marker_exists(exc: Exception) -> bool:
    """A transaction cancelled because its first item, the marker, exists: counted before."""
    response = getattr(exc, "response", None) or {}
    if response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    reasons = response.get("CancellationReasons") or []
    return bool(reasons) and reasons[0].get("Code") == "ConditionalCheckFailed"


def _query(**kwargs: Any) -> Iterator[dict[str, Any]]:
    paginator = _ddb().get_paginator("query")
    for page in paginator.paginate(TableName=config.table_name(), **kwargs):
        yield from page.get("Items", [])


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "date": item["PK"]["S"].removeprefix("EVENTS#"),
        "name": item["SK"]["S"],
        "count": int(item.get("count", {}).get("N", "0")),
        "firstSeen": int(item["firstSeen"]["N"]) if "firstSeen" in item else None,
        "lastSeen": int(item["lastSeen"]["N"]) if "lastSeen" in item else None,
        "metadataKeys": sorted(item.get("metadataKeys", {}).get("SS", [])),
    }


def for_day(day: str) -> list[dict[str, Any]]:
    """Every event name's counter on one day."""
    items = _query(KeyConditionExpression="PK = :pk", ExpressionAttributeValues={":pk": _s(f"EVENTS#{day}")})
    return [_plain(item) for item in items]


def for_event(name: str) -> list[dict[str, Any]]:
    """Every day's counter of one event name, newest day first."""
    items = _query(
        IndexName=GSI1,
        KeyConditionExpression="GSI1PK = :pk",
        ExpressionAttributeValues={":pk": _s(f"EVENTNAME#{name}")},
        ScanIndexForward=False,
    )
    return [_plain(item) for item in items]
