"""Event ingestion: POST /v1/webhooks/event_webhook (server secrets only).

The body is read raw (no pydantic body model): its size is checked before parsing, and the
events are validated by a hand-written validator that is fast for batches of 1,000. Rules,
error form (`events[<i>].<field>`), object keys and the retry rule: expconsole.services.ingest.
"""

from __future__ import annotations

import base64
from typing import Any

from expconsole.api.app import build, new_router
from expconsole.api.docs import responses
from expconsole.models.events import IngestAccepted
from expconsole.services import ingest

router = new_router()


@router.post(
    "/v1/webhooks/event_webhook",
    tags=["Ingestion"],
    summary="Ingest one event or a batch (array or {events}); at most 2,000 events and 1 MiB",
    responses=responses(202, IngestAccepted, "Accepted: every event is stored"),
    # The body is documented from this model (expconsole_tools.openapi) but checked by the service.
    openapi_extensions={"x-request-body-model": "expconsole.models.events:IngestBody"},
)
def ingest_events() -> tuple[dict[str, Any], int]:
    event = router.current_event
    body: str | bytes | None = event.body
    if body and event.is_base64_encoded:
        body = base64.b64decode(body)
    accepted, duplicates = ingest.ingest(body)
    return {"success": True, "accepted": accepted, "duplicates": duplicates}, 202


app, lambda_handler = build(router, key_kind="server")
