"""API Gateway (HTTP API, payload 2.0, simple responses) Lambda authorizer.

It resolves SERVICE-API-KEY to the key's kind and id and lets the request through with that
context; each function then requires its kind (console or server) and answers 401/403 with the
usual error body. API Gateway itself answers 401 when the header is missing.
"""

from __future__ import annotations

from typing import Any

from expconsole import observability
from expconsole.api.auth import UNKNOWN, header_value
from expconsole.services import keys


def authorize(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    presented = header_value(event.get("headers"))
    if presented is None:
        identity = event.get("identitySource") or []
        presented = identity[0] if identity else ""
    record = keys.resolve(presented or "")
    if record is None:
        return {"isAuthorized": True, "context": {"keyKind": UNKNOWN, "keyId": ""}}
    return {"isAuthorized": True, "context": {"keyKind": record["kind"], "keyId": record["keyId"]}}


# API Gateway counts every authorization itself; a metrics line per request would cost logs only.
lambda_handler = observability.instrument(authorize, with_metrics=False)
