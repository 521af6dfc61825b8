"""Builds the SDK spec document when entities change.

In AWS the table's DynamoDB stream invokes it (records filtered to entity items and batched over
a short window, so a burst of changes is one build); the local server invokes it after writes.
Any invocation is a rebuild from the table: the records only say that something changed.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools import Logger

from expconsole.services.sdk import documents

logger = Logger(service="expconsole")


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    records = len(event.get("Records") or []) if isinstance(event, dict) else 0
    result = asdict(documents.rebuild())
    logger.info("Spec document built", extra={"records": records, **result})
    return result
