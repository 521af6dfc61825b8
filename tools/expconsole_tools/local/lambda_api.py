"""Lambda's Invoke API for the sandboxes, so a function that invokes one asynchronously (the pulse
function queueing a load) does locally what it does in AWS.

A small HTTP server on 127.0.0.1 answers `POST /2015-03-31/functions/<name>/invocations` with
`X-Amz-Invocation-Type: Event` as Lambda does: 202 at once, then the invocation runs in the
function's sandboxes (gateway.Functions) on a thread of its own. The sandboxes find it through
`AWS_ENDPOINT_URL_LAMBDA`, which boto3 reads. `<name>` is the function's logical id (what
AWS_LAMBDA_FUNCTION_NAME is locally). Only asynchronous invocations are served: nothing in the
product invokes a function synchronously.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from expconsole_tools.local.gateway import Functions, InvocationError
from expconsole_tools.local.template import Function

_PATH = re.compile(r"^/2015-03-31/functions/([^/]+)/invocations$")


class LambdaApi:
    """The Invoke API on a free port of 127.0.0.1; `endpoint` is its URL."""

    def __init__(self, functions: Functions, by_name: dict[str, Function]) -> None:
        self.functions = functions
        self.by_name = by_name
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.api = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="lambda-api", daemon=True)
        self._running: set[threading.Thread] = set()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> LambdaApi:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def queue(self, function: Function, payload: Any) -> None:
        thread = threading.Thread(target=self._run, args=(function, payload), daemon=True)
        thread.start()

    def _run(self, function: Function, payload: Any) -> None:
        try:
            self.functions.invoke(function, payload)
        except InvocationError as exc:
            lines = [f"{function.logical_id} failed on an asynchronous invocation: {exc}"]
            if exc.detail:
                lines.append(exc.detail.rstrip("\n"))
            sys.stderr.write("\n".join(lines) + "\n")


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def do_POST(self) -> None:
        api: LambdaApi = self.server.api  # type: ignore[attr-defined]
        match = _PATH.match(self.path.partition("?")[0])
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if match is None:
            return self._answer(404, {"Type": "User", "message": f"Unknown path {self.path}"})
        name = unquote(match.group(1)).rsplit(":", 1)[-1]
        function = api.by_name.get(name)
        if function is None:
            return self._answer(404, {"Type": "User", "message": f"Function not found: {name}"})
        if self.headers.get("X-Amz-Invocation-Type") != "Event":
            return self._answer(
                400, {"Type": "User", "message": "only InvocationType Event is served locally"}
            )
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return self._answer(400, {"Type": "User", "message": "the payload is not JSON"})
        api.queue(function, payload)
        return self._answer(202, None)

    def _answer(self, status: int, body: Any) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the server's access log covers the API; this port is internal."""
