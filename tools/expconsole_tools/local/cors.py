"""CORS as API Gateway answers it for the API's `CorsConfiguration` (template.yaml), locally.

API Gateway answers a preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`)
itself, before routes and functions, and adds `Access-Control-Allow-Origin` to the answers
for an allowed origin. In the account the allowed origins are the stack parameter
`AllowedOrigins`; the local server allows its own origin and `localhost` (any port), which is
where a browser on the laptop runs a console or a notebook. Headers and methods mirror
template.yaml's CorsConfiguration.
"""

from __future__ import annotations

from urllib.parse import urlsplit

Headers = list[tuple[str, str]]

ALLOW_HEADERS = "content-type,service-api-key"
ALLOW_METHODS = "GET,POST,PUT,PATCH,DELETE"
EXPOSE_HEADERS = "allow,retry-after"
MAX_AGE = "600"
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def _header(headers: Headers, name: str) -> str | None:
    return next((value for key, value in headers if key.lower() == name), None)


def allowed_origin(headers: Headers) -> str | None:
    """The request's Origin when it may read the answer: this server's own origin, or localhost."""
    origin = _header(headers, "origin")
    if not origin:
        return None
    parts = urlsplit(origin)
    if parts.scheme not in ("http", "https"):
        return None
    if parts.netloc == (_header(headers, "host") or "") or parts.hostname in _LOCAL_HOSTS:
        return origin
    return None


def preflight(method: str, headers: Headers) -> Headers | None:
    """The headers of API Gateway's own 204 to a CORS preflight (none for an origin not allowed,
    so the browser refuses the call); None when the request is not a preflight."""
    if method != "OPTIONS" or not _header(headers, "access-control-request-method"):
        return None
    if _header(headers, "origin") is None:
        return None
    origin = allowed_origin(headers)
    if origin is None:
        return []
    return [
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Allow-Methods", ALLOW_METHODS),
        ("Access-Control-Allow-Headers", ALLOW_HEADERS),
        ("Access-Control-Max-Age", MAX_AGE),
        ("Vary", "Origin"),
    ]


def response_headers(headers: Headers) -> Headers:
    """What lets an allowed origin's page read an answer."""
    origin = allowed_origin(headers)
    if origin is None:
        return []
    return [
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Expose-Headers", EXPOSE_HEADERS),
        ("Vary", "Origin"),
    ]
