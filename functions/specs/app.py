"""Builds the SDK spec document when entities change.

In AWS the table's DynamoDB stream invokes it (records filtered to entity items and batched over
a short window, so a burst of changes is one build); the local server invokes it after writes.
Any invocation is a rebuild from the table: the records only say that something changed.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from expconsole import observability
from expconsole.services.sdk import documents

logger = observability.logger


def handle(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    records = len(event.get("Records") or []) if isinstance(event, dict) else 0
    result = asdict(documents.rebuild())
    logger.info("Spec document built", extra={"records": records, **result})
    return result


# Stream batches and the hourly schedule only: the build's log line says what a metric would.
lambda_handler = observability.instrument(handle, http=False, with_metrics=False)
