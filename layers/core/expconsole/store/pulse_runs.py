"""Pulse load history: one item per run of the pipeline for an experiment or holdout.

| item | PK                        | SK                              | doc                 |
|------|---------------------------|---------------------------------|---------------------|
| run  | `PULSELOAD#<KIND>#<id>`   | `<createdTime, 13 digits>#<run>`| the history record  |

Newest first is one Query in reverse. A run's item is written when it starts (state
`running`) and rewritten when it ends, so a run that dies leaves a visible `running` record.
Records expire after 400 days (TTL).
"""

from __future__ import annotations

import json
import time
from typing import Any

from expconsole import aws, config

TTL_DAYS = 400


def _pk(kind: str, entity_id: str) -> str:
    return f"PULSELOAD#{kind}#{entity_id}"


def put(kind: str, entity_id: str, run_id: str, record: dict[str, Any]) -> None:
    aws.client("dynamodb").put_item(
        TableName=config.table_name(),
        Item={
            "PK": {"S": _pk(kind, entity_id)},
            "SK": {"S": f"{int(record['createdTime']):013d}#{run_id}"},
            "doc": {"S": json.dumps(record, separators=(",", ":"))},
            "expiresAt": {"N": str(int(time.time()) + TTL_DAYS * 86_400)},
        },
    )


def list_runs(kind: str, entity_id: str) -> list[dict[str, Any]]:
    """Every run, newest first."""
    paginator = aws.client("dynamodb").get_paginator("query")
    out: list[dict[str, Any]] = []
    for page in paginator.paginate(
        TableName=config.table_name(),
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": {"S": _pk(kind, entity_id)}},
        ScanIndexForward=False,
    ):
        out.extend(json.loads(item["doc"]["S"]) for item in page.get("Items", []))
    return out
