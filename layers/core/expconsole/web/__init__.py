"""The web console: static pages (HTML, CSS, ES modules) that draw what the API computes.

The files live beside this module, so the core layer carries them to Lambda and the editable
install to the local server; `functions/web` answers `GET /` and `GET /ui/{path+}` with
`static_response`. Only files with a known type under this folder are served (no directory
listing, no dotfiles, no escaping the folder); each answer carries an ETag so a browser
revalidates cheaply, and a Content-Security-Policy that allows nothing but this origin.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

ROOT = Path(__file__).resolve().parent
INDEX = "index.html"
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
SECURITY_HEADERS = {
    # uPlot sizes its canvas through element.style (CSSOM, allowed); no inline script anywhere.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@cache
def _read(relative: str) -> tuple[bytes, str] | None:
    """The file's bytes and ETag, or None when it is not a servable file of this folder."""
    parts = PurePosixPath(relative).parts
    if not parts or any(p in ("", ".", "..") or p.startswith((".", "_")) for p in parts):
        return None
    path = ROOT.joinpath(*parts).resolve()
    if ROOT not in path.parents or path.suffix not in TYPES or not path.is_file():
        return None
    data = path.read_bytes()
    return data, '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


def _error(status: int, message: str, extra: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"Content-Type": "application/json", **(extra or {})},
        "body": json.dumps({"status": status, "message": message}),
        "isBase64Encoded": False,
    }


def static_response(method: str, path: str | None, headers: dict[str, str]) -> dict[str, Any]:
    """The payload-2.0 response for `GET /` (path None) or `GET /ui/<path>`."""
    if method.upper() not in ("GET", "HEAD"):
        return _error(
            405,
            f"{method} is not allowed here: the console's files are read with GET.",
            {"Allow": "GET, HEAD"},
        )
    relative = INDEX if path is None else path
    found = _read(relative)
    if found is None:
        return _error(404, f"No console file {relative!r}.")
    data, etag = found
    lower = {k.lower(): v for k, v in headers.items()}
    common = {"ETag": etag, "Cache-Control": "no-cache", **SECURITY_HEADERS}
    if etag in [t.strip() for t in lower.get("if-none-match", "").split(",")]:
        return {"statusCode": 304, "headers": common, "body": "", "isBase64Encoded": False}
    return {
        "statusCode": 200,
        "headers": {"Content-Type": TYPES[PurePosixPath(relative).suffix], **common},
        "body": data.decode("utf-8"),
        "isBase64Encoded": False,
    }
