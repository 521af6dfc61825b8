"""The local server: template.yaml's HTTP API on this machine, without Docker.

Requests are read with the standard library's threading HTTP server, turned into API Gateway
payload-2.0 events (see gateway.py) and handed to the same handlers Lambda runs, each in
sandboxes as on Lambda: worker processes (sandbox.py), started on demand up to
`max_concurrency` per function, that import the function once and serve one invocation at a
time, so concurrent requests overlap as they do in the account. DynamoDB and S3 are moto
embedded in this process (see backend.py), or the account with --aws; the sandboxes inherit
this process's environment, which points their AWS clients at it. With `build_dir` the
functions are the built ones (`make build`), run as Lambda runs them (see artifact.py).
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from expconsole.api.auth import KeyKind, mask_keys
from expconsole_tools.local.artifact import built_template, open_artifact
from expconsole_tools.local.backend import (
    LOCAL_BUCKET,
    LOCAL_TABLE,
    EmbeddedBackend,
    LocalError,
    aws_resources,
    use_backend,
)
from expconsole_tools.local.gateway import (
    DEFAULT_IDLE_SECONDS,
    DEFAULT_MAX_CONCURRENCY,
    MAX_BODY_BYTES,
    Functions,
    Gateway,
    HttpRequest,
    HttpResponse,
    gateway_error,
)
from expconsole_tools.local.template import find_template, load_api

DEFAULT_DATA_DIR = ".expconsole"
# What the web console asks for first: the page and its files (the web function), then, once a key
# is pasted, the experiments list (the experiments and layers functions, which check the key). With
# `warm` the server starts their sandboxes: the page's before it prints its URL (a cold start there
# would make a newcomer's first page take seconds), the others right after.
FIRST_PAGE: tuple[tuple[str, str], ...] = (("GET", "/"),)
SIGNED_IN: tuple[tuple[str, str], ...] = (("GET", "/console/v1/experiments"), ("GET", "/console/v1/layers"))
_KEY_NAMES: tuple[tuple[KeyKind, str], ...] = (("console", "consoleKey"), ("server", "serverSecret"))
_DRAIN_LIMIT = 64 * 1024 * 1024
_HOP_HEADERS = frozenset({"content-length", "connection", "transfer-encoding"})


class KeyConflict(LocalError):
    """A key given on the command line is registered as the other kind."""

    exit_code = 2


class LocalServer:
    """The console API on `host:port` (0: a free port), backed by moto or, with use_aws, the account.

    Ephemeral servers keep everything in memory; otherwise state lives in `data_dir` (default
    `.expconsole` in the working directory) and survives a restart. Keys not given are generated.
    Each function runs in up to `max_concurrency` sandboxes at once (worker processes, started
    when needed and stopped with the server); with `warm`, the web console's (FIRST_PAGE, then
    SIGNED_IN) are started with the server. One server per process: it points this process's
    environment, which the sandboxes inherit, at its backend.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        api_key: str | None = None,
        server_secret: str | None = None,
        data_dir: str | Path | None = None,
        ephemeral: bool = True,
        template: str | Path | None = None,
        build_dir: str | Path | None = None,
        use_aws: bool = False,
        stack_name: str = "expconsole",
        quiet: bool = False,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        warm: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        self.api_key = api_key or ""
        self.server_secret = server_secret or ""
        self.data_dir = None if ephemeral or use_aws else Path(data_dir or DEFAULT_DATA_DIR)
        self.use_aws = use_aws
        self.stack_name = stack_name
        self.quiet = quiet
        self.max_concurrency = max_concurrency
        self.idle_seconds = idle_seconds
        self.warm = warm
        self.backend: EmbeddedBackend | None = None
        self.table_name = ""
        self.bucket_name = ""
        self._given: dict[KeyKind, str | None] = {"console": api_key, "server": server_secret}
        self._template = template
        self._build_dir = build_dir
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._undo: list[Callable[[], None]] = []
        self._run_keys: list[str] = []

    @property
    def url(self) -> str:
        """The base URL clients use (append /console/v1/... or /v1/...)."""
        host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.host, self.host)
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}"

    def start(self) -> LocalServer:
        """Returns once the server is listening; LocalError (or TemplateError) if it cannot start."""
        if self._build_dir is not None and self._template is not None:
            raise LocalError("give a template or a build folder (whose template.yaml is used), not both")
        artifact = None
        if self._build_dir is None:
            api = load_api(find_template(self._template))
        else:
            api = load_api(built_template(self._build_dir))
            runtimes = {route.function.runtime for route in api.routes}
            artifact = open_artifact(self._build_dir, runtimes | {f.runtime for f in api.stream_functions})
        try:
            gateway = Gateway(api, Functions(self.max_concurrency, self.idle_seconds, artifact))
            self._httpd = _HttpServer((self.host, self.port), gateway, quiet=self.quiet)
        except OSError as exc:
            raise LocalError(f"cannot listen on {self.host}:{self.port}: {exc.strerror or exc}") from exc
        self.port = self._httpd.server_address[1]
        try:
            self._start_backend()
            # CloudWatch metrics (EMF lines) would only fill the terminal here; logs stay.
            self._undo.append(_setdefault_environ({**api.environment, "POWERTOOLS_METRICS_DISABLED": "true"}))
            self._start_lambda_api(api, gateway.functions)
            self.api_key, self.server_secret = self._keys()
            if self.warm:
                # Before the stream's first build, which would slow it down; a burst of the page's
                # files waits for its sandbox rather than starting one per file.
                gateway.warm(FIRST_PAGE, queue_bursts=True)
            gateway.start()
        except BaseException:
            self.stop()
            raise
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="expconsole-http",
            daemon=True,
        )
        self._thread.start()
        if self.warm:
            threading.Thread(
                target=gateway.warm, args=(SIGNED_IN,), name="expconsole-warm", daemon=True
            ).start()
        return self

    def _keys(self) -> tuple[str, str]:
        """The console key and server secret: given ones; else those generated by an earlier run
        on this data directory and still active; else new ones, kept there for the next run."""
        from expconsole.services import keys

        saved = _saved_keys(self.data_dir)
        chosen: dict[str, str] = {}
        generated: dict[str, str] = {}
        for kind, name in _KEY_NAMES:
            given = self._given[kind]
            if given:
                chosen[name] = _register(kind, given)
                continue
            if self.use_aws:
                # Kept for this run only: a key per start left active in the account would pile up.
                plain, record = keys.create_key(kind, "generated by expconsole serve --aws for one run")
                self._run_keys.append(record["keyId"])
                chosen[name] = plain
                continue
            previous = saved.get(name, "")
            known = keys.resolve(previous)
            chosen[name] = generated[name] = (
                previous if known is not None and known["kind"] == kind else _register(kind, None)
            )
        if self.data_dir is not None and any(saved.get(n) != v for n, v in generated.items()):
            _save_keys(self.data_dir, {**saved, **generated})
        return chosen["consoleKey"], chosen["serverSecret"]

    def _start_lambda_api(self, api: Any, functions: Functions) -> None:
        """Lambda's Invoke API for functions that invoke one asynchronously (see lambda_api.py)."""
        from expconsole_tools.local.lambda_api import LambdaApi

        by_name = {route.function.logical_id: route.function for route in api.routes}
        lambda_api = LambdaApi(functions, by_name).start()
        previous = os.environ.get("AWS_ENDPOINT_URL_LAMBDA")
        os.environ["AWS_ENDPOINT_URL_LAMBDA"] = lambda_api.endpoint

        def undo() -> None:
            lambda_api.stop()
            if previous is None:
                os.environ.pop("AWS_ENDPOINT_URL_LAMBDA", None)
            else:
                os.environ["AWS_ENDPOINT_URL_LAMBDA"] = previous

        self._undo.append(undo)

    def _start_backend(self) -> None:
        if self.use_aws:
            self.table_name, self.bucket_name = aws_resources(self.stack_name)
            self._undo.append(use_backend(None, self.table_name, self.bucket_name))
            return
        self.backend = EmbeddedBackend(self.data_dir)
        self.backend.start()
        self.table_name, self.bucket_name = LOCAL_TABLE, LOCAL_BUCKET

    def stop(self) -> None:
        """Stop accepting, let requests in flight finish, stop the sandboxes and the backend, and
        restore the environment."""
        if self._httpd is not None:
            if self._thread is not None:
                self._httpd.shutdown()
                self._thread.join()
                self._thread = None
            self._httpd.server_close()
            self._httpd.gateway.close()
            self._httpd = None
        self._deactivate_run_keys()
        if self.backend is not None:
            self.backend.stop()
            self.backend = None
        while self._undo:
            self._undo.pop()()

    def _deactivate_run_keys(self) -> None:
        """With --aws, deactivate the keys generated for this run, once no request can use them."""
        from botocore.exceptions import BotoCoreError, ClientError

        from expconsole.services import keys

        while self._run_keys:
            key_id = self._run_keys.pop()
            try:
                keys.deactivate(key_id)
            except (BotoCoreError, ClientError) as exc:  # say which key is left active
                sys.stderr.write(
                    f"expconsole serve: could not deactivate key {key_id} ({type(exc).__name__}: {exc}); "
                    f"run `expconsole keys deactivate {key_id} --aws`\n"
                )

    def banner(self) -> str:
        """What `expconsole serve` prints once at start: where to send requests, and with which keys."""
        if self.use_aws:
            data = f"Data: AWS, table {self.table_name}, bucket {self.bucket_name}"
            if not self._given["console"] or not self._given["server"]:
                data += (
                    "\nKeys: generated ones are deactivated when this server stops; pass keys from "
                    "`expconsole keys create --aws` to keep them"
                )
        elif self.data_dir is None:
            data = "Data: in memory (ephemeral: yes)"
        else:
            replayed = self.backend.replayed if self.backend else 0
            data = f"Data: {_display(self.data_dir)}/ (ephemeral: no; {replayed} writes replayed)"
            kept = _display(self.data_dir / KEYS_FILE)
            data += f"\nKeys: generated ones are kept in {kept} (mode 0600) and reused by the next run"
        lines = [f"Functions:    built, in {self._build_dir}"] if self._build_dir is not None else []
        lines += [
            f"Web console:  {self.url}/",
            f"Console API:  {self.url}/console/v1",
            f"Ingestion:    {self.url}/v1/webhooks/event_webhook",
            f"Console key (SERVICE-API-KEY):   {self.api_key}",
            f"Server secret (SERVICE-API-KEY): {self.server_secret}",
            data,
        ]
        if self.backend is not None:
            where = f"table {self.table_name}, bucket {self.bucket_name}"
            lines.append(f"Backend: moto at {self.backend.endpoint} ({where})")
        # The docs' examples read these three variables (README.md's quickstart, docs/).
        lines.append(f"Shell: export CONSOLE={self.url} KEY={self.api_key} SECRET={self.server_secret}")
        lines.append(f"Try: curl -H 'SERVICE-API-KEY: {self.api_key}' {self.url}/console/v1/gates")
        return "\n".join(lines)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


KEYS_FILE = "local-keys.json"


def _saved_keys(data_dir: Path | None) -> dict[str, str]:
    """The generated keys a previous run kept in the data directory (none if absent or unreadable)."""
    if data_dir is None:
        return {}
    try:
        saved = json.loads((data_dir / KEYS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in saved.items() if isinstance(v, str)} if isinstance(saved, dict) else {}


def _save_keys(data_dir: Path, keys: dict[str, str]) -> None:
    """Write the generated keys readable by this user only (0600), replacing the file whole."""
    path = data_dir / KEYS_FILE
    temporary = path.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(keys, out)
    os.chmod(temporary, 0o600)
    os.replace(temporary, path)


def _register(kind: KeyKind, given: str | None) -> str:
    """Register a given key (idempotent) or generate one; a given key of the other kind is refused."""
    from expconsole.services import keys

    description = "given to expconsole serve" if given else "generated by expconsole serve"
    try:
        plain, _record = keys.create_key(kind, description, key=given)
    except ValueError as exc:
        flag = "--api-key" if kind == "console" else "--server-secret"
        raise KeyConflict(f"{flag}: {exc}") from exc
    return plain


def _setdefault_environ(values: dict[str, str]) -> Callable[[], None]:
    """Set the template's global function variables not already set; return how to unset them."""
    added = [name for name in values if name not in os.environ]
    for name in added:
        os.environ[name] = values[name]

    def undo() -> None:
        for name in added:
            os.environ.pop(name, None)

    return undo


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


class _HttpServer(ThreadingHTTPServer):
    """One thread per connection; request threads are joined on close so requests in flight finish."""

    daemon_threads = True
    # socketserver's default backlog of 5 resets connections when a burst of clients (20
    # parallel requests) connects faster than they are accepted.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], gateway: Gateway, *, quiet: bool) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.gateway = gateway
        self.quiet = quiet
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        """Bind without HTTPServer's reverse DNS lookup of the address, which can stall a start."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), int(self.server_address[1])

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Reads one request, enforces API Gateway's body limit, answers, and closes the connection."""

    server: _HttpServer
    protocol_version = "HTTP/1.1"
    timeout = 10

    def handle_expect_100(self) -> bool:
        """Refuse an oversized body before the client sends it."""
        problem = self._length_problem()
        if problem is not None:
            self._send(problem, time.perf_counter())
            return False
        return super().handle_expect_100()

    def _dispatch(self) -> None:
        started = time.perf_counter()
        response = self._length_problem()
        if response is not None:
            self._discard_body()
        else:
            body = self._read_body()
            if isinstance(body, HttpResponse):
                response = body
            else:
                request = HttpRequest(
                    method=self.command,
                    target=self.path,
                    headers=list(self.headers.items()),
                    body=body,
                    source_ip=self.client_address[0],
                    protocol=self.request_version,
                )
                response = self.server.gateway.handle(request)
        self._send(response, started)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _dispatch

    def __getattr__(self, name: str) -> Any:
        """Any other method (TRACE, CONNECT, ...) goes to the gateway too, which answers 404 for a
        method no route declares, as API Gateway does (http.server would answer a bare 501)."""
        if name.startswith("do_"):
            return self._dispatch
        raise AttributeError(name)

    def _declared_length(self) -> int:
        """Content-Length, 0 when absent; ValueError when malformed."""
        value = self.headers.get("Content-Length")
        length = int(value) if value is not None else 0
        if length < 0:
            raise ValueError(value)
        return length

    def _length_problem(self) -> HttpResponse | None:
        try:
            length = self._declared_length()
        except ValueError:
            return gateway_error(400, "Bad Request")
        return gateway_error(413, "Request Entity Too Large") if length > MAX_BODY_BYTES else None

    def _discard_body(self) -> None:
        """Read and drop a refused body, so the client gets to read the answer instead of a reset."""
        try:
            remaining = self._declared_length()
        except ValueError:
            return
        if remaining > _DRAIN_LIMIT:
            return
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 1 << 16))
            if not chunk:
                return
            remaining -= len(chunk)

    def _read_body(self) -> bytes | HttpResponse:
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            return self.rfile.read(self._declared_length())
        chunks: list[bytes] = []
        total = 0
        try:
            while size := int(self.rfile.readline(1024).split(b";")[0].strip(), 16):
                total += size
                if total > MAX_BODY_BYTES:
                    return gateway_error(413, "Request Entity Too Large")
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
        except ValueError:
            return gateway_error(400, "Bad Request")
        while self.rfile.readline(65536).strip():
            continue
        return b"".join(chunks)

    def _send(self, response: HttpResponse, started: float) -> None:
        self.close_connection = True
        try:
            self.send_response(response.status)
            for name, value in response.headers:
                if name.lower() not in _HOP_HEADERS:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)
        except ConnectionError:
            return
        if not self.server.quiet:
            elapsed = (time.perf_counter() - started) * 1000
            path = mask_keys(self.path.partition("?")[0])
            sys.stderr.write(f"{self.command} {path} {response.status} {elapsed:.0f}ms\n")
            sys.stderr.flush()

    def version_string(self) -> str:
        return "expconsole"

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Silent: _send writes the access line (method, path without query, status, time)."""

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:
            super().log_message(format, *args)
