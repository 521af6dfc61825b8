"""Finding your way without a key: `/docs`, `/openapi.json`, `/health`, `/`, and every unknown route.

- `GET /docs`: Swagger UI (vendored in static/, see static/VERSION; no CDN) over `/openapi.json`.
- `GET /openapi.json`: the generated document (a copy `make openapi` writes beside this file),
  with `servers` set to the URL the request came to, so "Try it out" calls this very API, and
  the example fields that are times (`x-example-times`: field -> ms ahead, e.g. a scheduled start)
  set from the clock, so that every example can be sent as is.
- `GET /health`: 200 `{"status": "ok"}` for load balancers and scripts (no storage is touched).
- `GET /`: where to go next (replaced by the web console once it exists).
- `$default`: API Gateway sends here every request no route matches, so both environments answer
  a 404 `{status, message}` (with the route meant, for a near miss) or a 405 with `Allow`.

No key is needed: unlike the other functions, this one checks none (it does not use
`expconsole.api.app.build`), and it reads no key and no stored data.
"""

from __future__ import annotations

import base64
import difflib
import gzip
import json
import re
import time
from functools import cache
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
DOCUMENT = HERE / "openapi.json"
_ASSETS = {
    "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
}
# Routes this function answers itself, beside the document's (and `/`, the web console's).
_OWN = {"/": {"GET"}, "/docs": {"GET"}, "/openapi.json": {"GET"}, "/health": {"GET"}}
_OWN.update({f"/docs/{name}": {"GET"} for name in _ASSETS})
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Experimentation Console API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  persistAuthorization: true,
  tryItOutEnabled: true
});
</script>
</body>
</html>
"""


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(headers or {})},
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


@cache
def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    return document


@cache
def _asset(name: str) -> bytes:
    return gzip.compress((STATIC / name).read_bytes(), mtime=0)


def _routes() -> dict[str, set[str]]:
    """Path template → methods: the document's routes and this function's own."""
    out = {path: set(methods) for path, methods in _OWN.items()}
    for path, operations in _document().get("paths", {}).items():
        out.setdefault(path, set()).update(m.upper() for m in operations if m.upper() in _METHODS)
    return out


def _matches(template: str, path: str) -> bool:
    parts, pattern = path.rstrip("/").split("/") or [""], template.rstrip("/").split("/")
    if len(parts) != len(pattern):
        return False
    return all(
        re.fullmatch(r"\{[^{}]+\}", p) is not None or p == s for p, s in zip(pattern, parts, strict=True)
    )


def _base_url(event: dict[str, Any]) -> str:
    headers = {k.lower(): v for k, v in (event.get("headers") or {}).items()}
    host = headers.get("host") or (event.get("requestContext") or {}).get("domainName") or ""
    proto = headers.get("x-forwarded-proto", "https")
    return f"{proto}://{host}"


@cache
def _timed_examples() -> list[tuple[dict[str, Any], dict[str, int]]]:
    """Each example with fields to set from the clock, and those fields' distance ahead (ms)."""
    out: list[tuple[dict[str, Any], dict[str, int]]] = []
    for operations in _document().get("paths", {}).values():
        for operation in operations.values():
            content = (operation.get("requestBody") or {}).get("content", {}).get("application/json", {})
            times = content.get("x-example-times")
            if times:
                named = [e["value"] for e in content.get("examples", {}).values()]
                out.extend((example, times) for example in [content.get("example"), *named] if example)
    return out


def _openapi(event: dict[str, Any]) -> dict[str, Any]:
    # Counted from the next full hour (one value all hour long). Set in place: the cached
    # document is this function's alone, and every answer sets them afresh.
    hour = 3_600_000
    next_hour = (int(time.time() * 1000) // hour + 1) * hour
    for example, times in _timed_examples():
        for field, ahead in times.items():
            example[field] = next_hour + ahead
    doc = dict(_document())
    doc["servers"] = [
        {"url": _base_url(event), "description": "This server (the one that served this document)"}
    ]
    return _json(200, doc)


def _static(name: str, event: dict[str, Any]) -> dict[str, Any]:
    headers = {"Content-Type": _ASSETS[name], "Cache-Control": "public, max-age=86400"}
    accepts = {k.lower(): v for k, v in (event.get("headers") or {}).items()}.get("accept-encoding", "")
    if "gzip" in accepts:
        data, headers["Content-Encoding"] = _asset(name), "gzip"
    else:
        data = (STATIC / name).read_bytes()
    return {
        "statusCode": 200,
        "headers": headers,
        "body": base64.b64encode(data).decode("ascii"),
        "isBase64Encoded": True,
    }


def _unrouted(method: str, path: str) -> dict[str, Any]:
    """405 with Allow when the path exists under other methods; else 404, naming the route meant."""
    routes = _routes()
    allowed = sorted({m for template, methods in routes.items() if _matches(template, path) for m in methods})
    if method in allowed:  # only a trailing slash differs: routes have none
        return _json(
            404, {"status": 404, "message": f"No route for {method} {path}: drop the trailing slash."}
        )
    if allowed:
        allow = ", ".join(allowed)
        hint = f" use {allowed[0]}" if len(allowed) == 1 else f" use one of {allow}"
        # `GET /gates/x/rule` (a POST route): the GET route one typo away is likelier what was meant.
        others = {t: m for t, m in routes.items() if method in m and not _matches(t, path)}
        meant = nearest(method, path, others)
        also = f", or did you mean {method} {meant}?" if meant else "."
        return _json(
            405,
            {"status": 405, "message": f"{method} is not allowed on {path}:{hint}{also}"},
            {"Allow": allow},
        )
    message = f"No route for {method} {path}."
    meant = nearest(method, path, routes)
    if meant:
        methods = sorted(routes[meant])
        message += f" Did you mean {method if method in methods else '/'.join(methods)} {meant}?"
    message += " Every route: /docs (interactive) or /openapi.json."
    return _json(404, {"status": 404, "message": message})


# A request segment against a route's: a `{parameter}` takes any one segment at a small cost (so a
# literal segment that matches exactly wins), a literal one costs by how far the spelling is; a
# segment too far (or one missing or extra) costs 1, and a route costing 1 or more is no match.
_PARAMETER_COST = 0.1
_NEAR_SPELLING_COST = 0.2  # plural for singular, `_` or case left out
_PREFIX_COST = 0.4  # a shortened name: `pulse` for `pulse_results`
_MAX_EDIT_SHARE = 0.4
_OTHER_METHOD_COST = 0.3


def nearest(method: str, path: str, routes: dict[str, set[str]]) -> str | None:
    """The route template closest to `path` segment by segment, or None if none is close.

    Segments are aligned as in an edit distance (a segment missing or extra costs 1); a route
    that does not take `method` costs a little more than one that does, and on a tie the one
    whose whole path reads closest wins."""
    given = [s for s in path.split("/") if s]
    best: tuple[float, float, str] | None = None
    for template, methods in routes.items():
        cost = _path_cost([s for s in template.split("/") if s], given)
        cost += 0 if method in methods else _OTHER_METHOD_COST
        if cost >= 1:
            continue
        ranked = (cost, -difflib.SequenceMatcher(None, template, path).ratio(), template)
        if best is None or ranked < best:
            best = ranked
    return None if best is None else best[2]


def _path_cost(template: list[str], given: list[str]) -> float:
    previous = [float(j) for j in range(len(given) + 1)]
    for i, segment in enumerate(template, start=1):
        current = [float(i)]
        for j, part in enumerate(given, start=1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + _segment_cost(segment, part))
            )
        previous = current
    return previous[-1]


def _segment_cost(template: str, given: str) -> float:
    if re.fullmatch(r"\{[^{}]+\}", template):
        return _PARAMETER_COST
    if template == given:
        return 0.0
    a, b = _plain(template), _plain(given)
    if a == b or _singular(a) == _singular(b):
        return _NEAR_SPELLING_COST
    if min(len(a), len(b)) >= 4 and (a.startswith(b) or b.startswith(a)):
        return _PREFIX_COST
    edits = min(_edits(a, b), _edits(_singular(a), _singular(b)))
    if edits == 1:  # one letter off, however short the segment (`v2` for `v1`)
        return min(0.5, edits / max(len(a), len(b)))
    share = edits / max(len(a), len(b))
    return share if share <= _MAX_EDIT_SHARE else 1.0


def _plain(segment: str) -> str:
    return re.sub(r"[_\-.]", "", segment.lower())


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _edits(a: str, b: str) -> int:
    """Levenshtein distance."""
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    http = (event.get("requestContext") or {}).get("http") or {}
    method = str(http.get("method") or "GET").upper()
    path = str(event.get("rawPath") or http.get("path") or "/")
    route = event.get("routeKey", "$default")
    if route == "GET /health":
        return _json(200, {"status": "ok"}, {"Cache-Control": "no-store"})
    if route == "GET /openapi.json":
        return _openapi(event)
    if route == "GET /docs":
        return {
            "statusCode": 200,
            "headers": {"Content-Type": "text/html; charset=utf-8"},
            "body": _PAGE,
            "isBase64Encoded": False,
        }
    if route == "GET /docs/{file}":
        name = (event.get("pathParameters") or {}).get("file", "")
        if name in _ASSETS:
            return _static(name, event)
        return _json(404, {"status": 404, "message": f"No file {name!r} under /docs."})
    return _unrouted(method, path)
