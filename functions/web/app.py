"""The web console's static files: `GET /` (the page) and `GET /ui/{path+}` (its scripts and styles).

Public routes that check no key: the files hold no data, and the pages call the API
with the console key the user signs in with. Served from the package (`expconsole/web`, in the
core layer) by this one function, so the console and the API share an origin and need no CORS.
The function touches no AWS resource (its role has no policy).
"""

from __future__ import annotations

from typing import Any

from expconsole import observability
from expconsole.web import static_response


def serve(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    http = (event.get("requestContext") or {}).get("http") or {}
    path = (event.get("pathParameters") or {}).get("path")
    return static_response(http.get("method", "GET"), path, event.get("headers") or {})


lambda_handler = observability.instrument(serve, with_metrics=False)
