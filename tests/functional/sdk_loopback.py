"""A loopback Statsig protocol server and the two real SDKs pointed at it.

It serves one v1 spec document (and its v2 conversion), id lists as `+<hash>` files honouring
`Range`, and swallows `log_event`; the SDKs never reach Statsig's hosts (the pure SDK's error
reporter is pointed here too, the Rust core's fails silently offline).
"""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from expconsole.services.sdk.hashing import id_list_hash
from expconsole.services.sdk.v2 import v1_to_v2
from tests.e2e import sdk_clients

SDK_KEY = "secret-loopback-test"


class _State:
    def __init__(self, doc: Mapping[str, Any], id_lists: Mapping[str, list[str]]) -> None:
        self.v1 = json.dumps(doc).encode()
        self.v2 = json.dumps(v1_to_v2(doc)).encode()
        self.files = {
            name: "".join(f"+{id_list_hash(member)}\n" for member in members).encode()
            for name, members in id_lists.items()
        }
        self.events: list[dict[str, Any]] = []
        self.paths: list[str] = []


def _handler(state: _State) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, body: bytes, status: int = 200, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            state.paths.append(self.path)
            path = self.path.split("?", 1)[0]
            if path == f"/v1/download_config_specs/{SDK_KEY}.json":
                return self._send(state.v1)
            if path == f"/v2/download_config_specs/{SDK_KEY}.json":
                return self._send(state.v2)
            if path.startswith("/id_lists/"):
                content = state.files.get(path.removeprefix("/id_lists/"))
                if content is None:
                    return self._send(b"", 404)
                start = int((self.headers.get("Range") or "bytes=0-").split("=", 1)[1].split("-", 1)[0] or 0)
                return self._send(content[start:], 206 if start else 200, "text/plain")
            return self._send(b"{}", 404)

        def do_POST(self) -> None:
            state.paths.append(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path == "/v1/get_id_lists":
                host = f"http://127.0.0.1:{self.server.server_address[1]}"
                lists = {
                    name: {
                        "name": name,
                        "size": len(content),
                        "url": f"{host}/id_lists/{name}",
                        "creationTime": 1,
                        "fileID": f"file-{name}",
                    }
                    for name, content in state.files.items()
                }
                return self._send(json.dumps(lists).encode())
            if self.path == "/v1/log_event":
                state.events.extend(json.loads(body or b"{}").get("events", []))
                return self._send(b'{"success": true}', 202)
            return self._send(b"{}", 200)

    return Handler


@contextmanager
def loopback(doc: Mapping[str, Any], id_lists: Mapping[str, list[str]]) -> Iterator[tuple[str, _State]]:
    """Serve `doc` and `id_lists` (raw ids) on 127.0.0.1; yields the base URL and the state."""
    state = _State(doc, id_lists)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def pure_sdk(base: str) -> Iterator[Any]:
    """The `statsig` pure-Python server SDK, initialised from the loopback server."""
    with sdk_clients.pure_sdk(base, SDK_KEY) as sdk:
        yield sdk


@contextmanager
def core_sdk(base: str) -> Iterator[Any]:
    """`statsig-python-core` (the Rust core) reading the v2 document from the loopback server."""
    with sdk_clients.core_sdk(base, SDK_KEY) as sdk:
        yield sdk
