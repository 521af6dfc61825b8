"""The ids of id-list segments: one small item per id, beside the segment's document.

| item          | PK                             | SK     |
|---------------|--------------------------------|--------|
| id of a list  | `SEGIDS#<segment id>#<list key>` | `<id>` |

A list can hold far more ids than one 400 KB item, so they are not in the segment's document.
The list key is a random token the segment stores when it is created: a segment deleted and
created again under the same id starts with an empty list even if removing the old ids was
interrupted. Adding an id that is there already rewrites the same item, removing one that is
not there does nothing: the stored ids are a set. Writes go out in BatchWriteItem calls of 25,
with unprocessed items retried (exponential backoff); reads are consistent queries that return
only the keys, in sort-key order.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from expconsole import aws, config

BATCH = 25  # BatchWriteItem's limit
MAX_RETRIES = 8


def _ddb() -> Any:
    return aws.client("dynamodb")


def _pk(segment_id: str, list_key: str) -> str:
    return f"SEGIDS#{segment_id}#{list_key}"


def _batch_write(requests: list[dict[str, Any]]) -> None:
    table = config.table_name()
    for start in range(0, len(requests), BATCH):
        pending: dict[str, Any] = {table: requests[start : start + BATCH]}
        attempt = 0
        while pending:
            pending = _ddb().batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
            if pending:
                attempt += 1
                if attempt > MAX_RETRIES:
                    raise RuntimeError("DynamoDB left segment ids unprocessed after retries")
                time.sleep(min(0.05 * 2**attempt, 2.0))


def add(segment_id: str, list_key: str, ids: Sequence[str]) -> None:
    """Store these ids (distinct: one batch may not name an item twice)."""
    pk = _pk(segment_id, list_key)
    _batch_write([{"PutRequest": {"Item": {"PK": {"S": pk}, "SK": {"S": i}}}} for i in ids])


def remove(segment_id: str, list_key: str, ids: Sequence[str]) -> None:
    """Remove these ids (distinct); ids not in the list are ignored."""
    pk = _pk(segment_id, list_key)
    _batch_write([{"DeleteRequest": {"Key": {"PK": {"S": pk}, "SK": {"S": i}}}} for i in ids])


def _keys(segment_id: str, list_key: str) -> Iterator[str]:
    paginator = _ddb().get_paginator("query")
    pages = paginator.paginate(
        TableName=config.table_name(),
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": _pk(segment_id, list_key)}},
        ProjectionExpression="SK",
        ConsistentRead=True,
    )
    for page in pages:
        for item in page.get("Items", []):
            yield item["SK"]["S"]


def all_ids(segment_id: str, list_key: str) -> list[str]:
    """Every id of the list, in sort-key (code point of UTF-8) order."""
    return list(_keys(segment_id, list_key))


def count(segment_id: str, list_key: str) -> int:
    paginator = _ddb().get_paginator("query")
    pages = paginator.paginate(
        TableName=config.table_name(),
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": _pk(segment_id, list_key)}},
        Select="COUNT",
        ConsistentRead=True,
    )
    return sum(int(page.get("Count", 0)) for page in pages)


def purge(segment_id: str, list_key: str) -> None:
    """Remove the whole list (when its segment is deleted)."""
    remove(segment_id, list_key, all_ids(segment_id, list_key))
