"""Hourly gate-check counters (from the SDKs' gate exposures), counted once per stored batch.

| item           | PK                     | SK              | GSI1PK            | GSI1SK           |
|----------------|------------------------|-----------------|-------------------|------------------|
| hour counter   | `GATECHECKS#<gate>`    | `H#<YYYY-MM-DDTHH>` | `GATECHECKHOURS` | `<hour>#<gate>` |
| first/last     | `GATECHECKS#<gate>`    | `SEEN`          | `GATECHECKSEEN`   | `<gate>`         |
| batch marker   | `GATECHECKOBJ#<batch>` | `<chunk>`       |                   |                  |

An hour counter holds `checks` and `passes` (ADD) and expires after 31 days (TTL); `SEEN` holds
`firstChecked` (if_not_exists) and `lastChecked` (the newest batch's hour; a late batch may set
an older hour, by at most the SDKs' flush delay). As for event counters (store.event_counters),
one batch's updates go in one transaction with a conditional marker, so a retried batch counts
nothing twice. GSI1 gives every gate's last 24 hours in one query (the gates list).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from expconsole import aws, config
from expconsole.store import dynamo, event_counters
from expconsole.store.dynamo import GSI1

CHUNK = 49  # (hour counter + SEEN) per gate and hour, plus the marker, within 100 items
TTL_DAYS = 31
HOURS_INDEX = "GATECHECKHOURS"
SEEN_INDEX = "GATECHECKSEEN"


@dataclass
class Tally:
    checks: int = 0
    passes: int = 0


def hour_of(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H")


def _ddb() -> Any:
    return aws.client("dynamodb")


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _n(value: int) -> dict[str, str]:
    return {"N": str(value)}


def _updates(table: str, gate: str, hour: str, tally: Tally, expires: int) -> list[dict[str, Any]]:
    counter = {
        "Update": {
            "TableName": table,
            "Key": {"PK": _s(f"GATECHECKS#{gate}"), "SK": _s(f"H#{hour}")},
            "UpdateExpression": "ADD checks :c, passes :p SET GSI1PK = :g, GSI1SK = :k, expiresAt = :e",
            "ExpressionAttributeValues": {
                ":c": _n(tally.checks),
                ":p": _n(tally.passes),
                ":g": _s(HOURS_INDEX),
                ":k": _s(f"{hour}#{gate}"),
                ":e": _n(expires),
            },
        }
    }
    seen = {
        "Update": {
            "TableName": table,
            "Key": {"PK": _s(f"GATECHECKS#{gate}"), "SK": _s("SEEN")},
            "UpdateExpression": (
                "SET firstChecked = if_not_exists(firstChecked, :h), lastChecked = :h,"
                " GSI1PK = :g, GSI1SK = :gate"
            ),
            "ExpressionAttributeValues": {":h": _s(hour), ":g": _s(SEEN_INDEX), ":gate": _s(gate)},
        }
    }
    return [counter, seen]


def record(batch: str, tallies: dict[tuple[str, str], Tally], now_ms: int) -> None:
    """Count one batch's checks (by gate and hour) once; a retried batch counts nothing."""
    from botocore.exceptions import ClientError

    table = config.table_name()
    expires = now_ms // 1000 + TTL_DAYS * 86_400
    keys = sorted(tallies)
    for chunk_index, start in enumerate(range(0, len(keys), CHUNK)):
        marker = {
            "Update": {
                "TableName": table,
                "Key": {"PK": _s(f"GATECHECKOBJ#{batch}"), "SK": _s(str(chunk_index))},
                "UpdateExpression": "SET countedAt = :now, expiresAt = :e",
                "ConditionExpression": "attribute_not_exists(PK)",
                "ExpressionAttributeValues": {":now": _n(now_ms), ":e": _n(expires)},
            }
        }
        items = [marker]
        for gate, hour in keys[start : start + CHUNK]:
            items += _updates(table, gate, hour, tallies[gate, hour], expires)
        for attempt in range(dynamo.CONFLICT_RETRIES + 1):
            try:
                _ddb().transact_write_items(TransactItems=items)
            except ClientError as exc:
                if dynamo.is_transient_cancellation(exc) and attempt < dynamo.CONFLICT_RETRIES:
                    dynamo.conflict_pause(attempt)
                    continue
                if not event_counters.marker_exists(exc):
                    raise
            break


def _query(**kwargs: Any) -> Iterator[dict[str, Any]]:
    paginator = _ddb().get_paginator("query")
    for page in paginator.paginate(TableName=config.table_name(), **kwargs):
        yield from page.get("Items", [])


@dataclass
class Usage:
    """A gate's checks over the last 24 hours, and when it was first and last checked."""

    checks: int = 0
    passes: int = 0
    first_checked: str | None = None
    last_checked: str | None = None


def _since(now_ms: int | None) -> str:
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return hour_of(now - 23 * 3_600_000)


def usage_of(gate: str, now_ms: int | None = None) -> Usage:
    """One gate's usage (one query)."""
    out = Usage()
    since = _since(now_ms)
    items = _query(
        KeyConditionExpression="PK = :pk AND SK >= :from",
        ExpressionAttributeValues={":pk": _s(f"GATECHECKS#{gate}"), ":from": _s(f"H#{since}")},
    )
    for item in items:
        if item["SK"]["S"] == "SEEN":
            out.first_checked = item.get("firstChecked", {}).get("S")
            out.last_checked = item.get("lastChecked", {}).get("S")
        else:
            out.checks += int(item.get("checks", {}).get("N", "0"))
            out.passes += int(item.get("passes", {}).get("N", "0"))
    return out


def every_gate(now_ms: int | None = None) -> dict[str, Usage]:
    """Every gate ever checked (in the counters' 31 days): counts of its last 24 hours, first and
    last check (two queries, whatever the number of gates)."""
    out: dict[str, Usage] = {}
    for item in _query(
        IndexName=GSI1,
        KeyConditionExpression="GSI1PK = :g",
        ExpressionAttributeValues={":g": _s(SEEN_INDEX)},
    ):
        usage = out.setdefault(item["GSI1SK"]["S"], Usage())
        usage.first_checked = item.get("firstChecked", {}).get("S")
        usage.last_checked = item.get("lastChecked", {}).get("S")
    items = _query(
        IndexName=GSI1,
        KeyConditionExpression="GSI1PK = :g AND GSI1SK >= :from",
        ExpressionAttributeValues={":g": _s(HOURS_INDEX), ":from": _s(_since(now_ms))},
    )
    for item in items:
        gate = item["PK"]["S"].removeprefix("GATECHECKS#")
        usage = out.setdefault(gate, Usage())
        usage.checks += int(item.get("checks", {}).get("N", "0"))
        usage.passes += int(item.get("passes", {}).get("N", "0"))
    return out
