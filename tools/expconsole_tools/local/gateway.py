"""API Gateway (HTTP API) and Lambda as the local server plays them: routes, payload-2.0 events,
and sandboxes that run the functions (which check keys themselves, as in AWS).

The functions are the deployed ones. Each runs in sandboxes as on Lambda (`Functions`, and
sandbox.py for the worker side): worker processes that import the function once and serve one
invocation at a time, so concurrent requests run concurrently. What API Gateway does before and
after them is reproduced here, down to its bare `{"message": ...}` errors (500 when a function
fails or its sandbox dies, 503 when it times out), so a client sees the same behaviour locally
and in the account.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote

import expconsole
import expconsole_tools
from expconsole_tools.local import cors
from expconsole_tools.local import sandbox as sandbox_module
from expconsole_tools.local.artifact import Artifact
from expconsole_tools.local.sandbox import (
    ACCOUNT_ID,
    BOOTSTRAP,
    BUILT_BOOTSTRAP,
    read_message,
    write_message,
)
from expconsole_tools.local.template import DEFAULT_ROUTE, Api, Function, Route, module_name

API_ID = "local"
MAX_BODY_BYTES = 10 * 1024 * 1024
DEFAULT_MAX_CONCURRENCY = 10
# Lambda stops an execution environment idle for a while (minutes); the local server does the same
# sooner, so a laptop does not keep a worker process per function and burst all day.
DEFAULT_IDLE_SECONDS = 120.0
INIT_LIMIT_S = 10.0  # Lambda's limit on a cold start, before the function's own Timeout applies

_REPLY_GRACE_S = 0.5  # beyond the function's Timeout, for the reply to cross the pipe
_STOP_GRACE_S = 2.0
_EXIT_WAIT_S = 1.0
# The folders holding this package and the runtime package it serves (the same in an install, two
# in the repository: tools/ and layers/core/), put first on a source-tree sandbox's path.
_PACKAGE_ROOTS = os.pathsep.join(
    dict.fromkeys(str(Path(m.__path__[0]).resolve().parent) for m in (expconsole, expconsole_tools))
)
# Sandboxes are not in the server's process group: Ctrl-C reaches the server, which stops them.
_OWN_PROCESS_GROUP: dict[str, Any] = (
    {"process_group": 0}
    if os.name == "posix"
    else {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
)

_EXACT, _PARAM, _GREEDY = 0, 1, 2
_PARAM_SEGMENT = re.compile(r"^\{([^{}+]+)\}$")
_GREEDY_SEGMENT = re.compile(r"^\{([^{}+]+)\+\}$")


@dataclass
class HttpRequest:
    """A request as it arrived: `target` is the path and query exactly as sent."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    source_ip: str = "127.0.0.1"
    protocol: str = "HTTP/1.1"


@dataclass
class HttpResponse:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


def gateway_error(status: int, message: str) -> HttpResponse:
    """An error API Gateway itself answers with (not a function): a bare `{"message": ...}`."""
    return HttpResponse(
        status, [("Content-Type", "application/json")], json.dumps({"message": message}).encode()
    )


class RouteTable:
    """HTTP API route selection: exact segments beat `{param}`, which beats `{proxy+}`."""

    def __init__(self, routes: list[Route]) -> None:
        self._routes = [(route, _compile(route.path)) for route in routes if route.path != DEFAULT_ROUTE]
        self._default = next((route for route in routes if route.path == DEFAULT_ROUTE), None)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The route for a request and its URL-decoded path parameters; None is a 404.

        A known path with an unrouted method is a 404 too, as API Gateway answers it, unless the
        API has a `$default` route, which then gets the request.
        """
        parts = path.split("/")[1:]
        best: tuple[Any, Route, dict[str, str]] | None = None
        for route, pattern in self._routes:
            if route.method not in (method, "ANY"):
                continue
            params = _match(pattern, parts)
            if params is None:
                continue
            rank = (tuple(kind for kind, _ in pattern), route.method == "ANY")
            if best is None or rank < best[0]:
                best = (rank, route, params)
        if best is None:
            return None if self._default is None else (self._default, {})
        return best[1], best[2]


def _compile(path: str) -> list[tuple[int, str]]:
    pattern = []
    for segment in path.split("/")[1:]:
        if greedy := _GREEDY_SEGMENT.match(segment):
            pattern.append((_GREEDY, greedy.group(1)))
        elif param := _PARAM_SEGMENT.match(segment):
            pattern.append((_PARAM, param.group(1)))
        else:
            pattern.append((_EXACT, segment))
    return pattern


def _match(pattern: list[tuple[int, str]], parts: list[str]) -> dict[str, str] | None:
    params: dict[str, str] = {}
    for index, (kind, value) in enumerate(pattern):
        if kind == _GREEDY:
            rest = "/".join(parts[index:])
            if not rest:
                return None
            params[value] = unquote(rest)
            return params
        if index >= len(parts):
            return None
        if kind == _EXACT and unquote(parts[index]) != value:
            return None
        if kind == _PARAM:
            if not parts[index]:
                return None
            params[value] = unquote(parts[index])
    return params if len(parts) == len(pattern) else None


def build_event(
    request: HttpRequest, route: Route, path_parameters: dict[str, str], *, request_id: str, now: float
) -> dict[str, Any]:
    """The payload-2.0 event API Gateway would send the route's function for this request."""
    path, _, query = request.target.partition("?")
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in request.headers:
        lower = name.lower()
        if lower == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
        else:
            headers[lower] = f"{headers[lower]},{value}" if lower in headers else value
    host = headers.get("host", "")
    forwarded = headers.get("x-forwarded-for")
    headers["x-forwarded-for"] = f"{forwarded}, {request.source_ip}" if forwarded else request.source_ip
    headers.setdefault("x-forwarded-proto", "http")
    port = host.rpartition(":")[2]
    headers.setdefault("x-forwarded-port", port if port.isdigit() else "80")

    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route.route_key,
        "rawPath": path,
        "rawQueryString": query,
    }
    if cookies:
        event["cookies"] = cookies
    event["headers"] = headers
    if query:
        parameters: dict[str, str] = {}
        for name, value in parse_qsl(query, keep_blank_values=True):
            parameters[name] = f"{parameters[name]},{value}" if name in parameters else value
        event["queryStringParameters"] = parameters
    event["requestContext"] = {
        "accountId": ACCOUNT_ID,
        "apiId": API_ID,
        "domainName": host,
        "domainPrefix": host.split(".")[0].split(":")[0],
        "http": {
            "method": request.method,
            "path": path,
            "protocol": request.protocol,
            "sourceIp": request.source_ip,
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": request_id,
        "routeKey": route.route_key,
        "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
        "timeEpoch": int(now * 1000),
    }
    encoded = False
    if request.body:
        try:
            event["body"] = request.body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(request.body).decode("ascii")
            encoded = True
    if path_parameters:
        event["pathParameters"] = path_parameters
    event["isBase64Encoded"] = encoded
    return event


def to_http_response(result: Any) -> HttpResponse:
    """A function's payload-2.0 result as the HTTP response API Gateway sends."""
    if not (isinstance(result, dict) and "statusCode" in result):
        return HttpResponse(200, [("Content-Type", "application/json")], json.dumps(result).encode())
    body = result.get("body") or ""
    if not isinstance(body, str):
        raise TypeError(f"body must be a string, got {type(body).__name__}")
    data = base64.b64decode(body, validate=True) if result.get("isBase64Encoded") else body.encode("utf-8")
    headers = [(str(name), str(value)) for name, value in (result.get("headers") or {}).items()]
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("Content-Type", "application/json"))
    headers.extend(("Set-Cookie", str(cookie)) for cookie in result.get("cookies") or [])
    return HttpResponse(int(result["statusCode"]), headers, data)


class InvocationError(Exception):
    """An invocation that produced no result; `status` and `message` are API Gateway's answer."""

    status = 500
    message = "Internal Server Error"

    def __init__(self, what: str, detail: str = "") -> None:
        super().__init__(what)
        self.detail = detail


class FunctionError(InvocationError):
    """The handler raised, or its module could not be imported; `detail` is its stack trace."""


class SandboxCrashed(InvocationError):
    """The sandbox's process died (or could not start) before it answered."""


class FunctionTimeout(InvocationError):
    """The function ran past its Timeout: its sandbox is killed, as Lambda does."""

    status = 503
    message = "Service Unavailable"


class ServerStopping(InvocationError):
    """The server is stopping and starts no more invocations."""

    status = 503
    message = "Service Unavailable"


class _Sandbox:
    """The server's end of one sandbox (see sandbox.py): a worker process and its pipes.

    A reader thread turns the worker's replies into a queue, so waiting for one can time out.
    """

    def __init__(self, function: Function, artifact: Artifact | None = None) -> None:
        self.function = function
        self.artifact = artifact
        # From the source tree: this interpreter, with this copy of the package. From a build: the
        # runtime's interpreter, isolated (-I), without site-packages (-S), writing no bytecode into
        # the build (-B: Lambda's code folder is read-only); see artifact.py.
        command = (
            [sys.executable, "-P", "-c", BOOTSTRAP, _PACKAGE_ROOTS]
            if artifact is None
            else [artifact.python, "-I", "-S", "-B", "-c", BUILT_BOOTSTRAP, str(sandbox_module.__file__)]
        )
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            **_OWN_PROCESS_GROUP,
        )
        self.pid = self.process.pid
        self._started = time.monotonic()
        self.cold_start_s = 0.0  # from the process's start to its handler imported
        self.idle_since = self._started
        self._cold_allowance = 0.0
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(
            target=self._read, name=f"sandbox-{function.logical_id}-{self.pid}", daemon=True
        )
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        try:
            while (message := read_message(self.process.stdout)) is not None:
                self._replies.put(message)
        except (OSError, ValueError, EOFError):
            pass  # a reply cut short is a sandbox that died
        self._replies.put(None)

    def init(self) -> None:
        """Import the handler: the cold start, within Lambda's 10 s init limit plus the Timeout.

        What the init leaves of those 10 s is allowed to the first invocation too, which pays for
        whatever the handler loads lazily: on a busy machine, with sandboxes starting side by side,
        that can take seconds, where Lambda gives each sandbox a CPU of its own.
        """
        function = self.function
        message: dict[str, Any] = {
            "type": "init",
            "function": function.logical_id,
            "module": module_name(function),
            "file": str(function.module_file),
            "handler": function.handler_name,
            "memory": function.memory_mb,
            "timeout": function.timeout_s,
            "environment": dict(function.environment),
        }
        if self.artifact is not None:
            message["path"], message["runtime_path"] = self.artifact.import_path(function)
            message["environment"] = {**message["environment"], **self.artifact.environment(function)}
        limit = INIT_LIMIT_S + function.timeout_s
        self._request(message, limit, "initialising", f"did not initialise within {limit:g} s")
        self.cold_start_s = time.monotonic() - self._started
        self._cold_allowance = max(0.0, INIT_LIMIT_S - self.cold_start_s)

    def invoke(self, event: dict[str, Any], redact: list[str]) -> Any:
        timeout, allowance = self.function.timeout_s, self._cold_allowance
        self._cold_allowance = 0.0
        late = f"ran past its Timeout of {timeout:g} s"
        if allowance:
            late += f" (plus {allowance:.1f} s left from its cold start)"
        reply = self._request(
            {"type": "invoke", "event": event, "redact": redact},
            timeout + allowance + _REPLY_GRACE_S,
            "running",
            late,
        )
        return reply.get("result")

    def _request(self, message: dict[str, Any], timeout: float, doing: str, late: str) -> dict[str, Any]:
        name = f"sandbox {self.pid}"
        assert self.process.stdin is not None
        try:
            write_message(self.process.stdin, message)
        except (OSError, ValueError):  # a broken pipe, or one closed by close()
            raise SandboxCrashed(f"{name} is gone: {self._exit_status()}") from None
        try:
            reply = self._replies.get(timeout=timeout)
        except queue.Empty:
            raise FunctionTimeout(f"{name} {late}: killed") from None
        if reply is None:
            raise SandboxCrashed(f"{name} died {doing}: {self._exit_status()}")
        if reply.get("type") == "error":
            error = reply.get("error") or {}
            what = f"{name} {error.get('errorType', 'Error')}: {error.get('errorMessage', '')}"
            raise FunctionError(what, "".join(error.get("stackTrace") or []))
        return reply

    def _exit_status(self) -> str:
        try:
            code = self.process.wait(_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            return "its pipe broke"
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def close(self) -> None:
        """Ask the worker to exit (its stdin closes), without waiting."""
        if self.process.stdin is not None:
            with contextlib.suppress(OSError):
                self.process.stdin.close()

    def stop(self, grace: float = _STOP_GRACE_S) -> None:
        """End the worker (gently within `grace` seconds, else killed) and reap it."""
        self.close()
        if grace > 0:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(grace)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._reader.join(_EXIT_WAIT_S)
        if self.process.stdout is not None:
            self.process.stdout.close()


class _Pool:
    """The sandboxes of one function: idle ones are reused (warm), new ones started up to `limit`.

    Past the limit a request waits for a sandbox to be free, as Lambda throttles; locally that
    is a wait rather than a 429. Below it, a request that finds every sandbox busy starts another
    at once, as Lambda does, so concurrent requests really run concurrently (the write races of
    the tests and bench/load.py rely on it). The one departure, `queue_bursts`, is for the function
    serving the web console's files: there a request that finds every sandbox busy waits for one
    for at most as long as the function's last cold start took, and only then starts another.
    Lambda would start one at once on a CPU of its own, but here a cold start takes cores the
    others need, and a browser loading the console's dozen files at once (5 ms each) would
    otherwise start a sandbox per file, each slower than waiting.
    """

    def __init__(
        self, function: Function, limit: int, artifact: Artifact | None = None, *, queue_bursts: bool = False
    ) -> None:
        self.function = function
        self.limit = limit
        self.artifact = artifact
        self.queue_bursts = queue_bursts
        self._ready = threading.Condition()
        self._idle: list[_Sandbox] = []
        self._live: set[_Sandbox] = set()
        self._starting = 0
        self._warming = 0  # sandboxes started ahead of any request (warm())
        self._cold_start_s = 0.0  # the last cold start's duration: how long to wait for a busy one
        self._closed = False

    def warm(self) -> None:
        """Start a sandbox ahead of its first request, left idle once its handler is imported;
        nothing if the function has one already. Requests that come meanwhile wait for it."""
        with self._ready:
            if self._closed or self._live or self._starting or self._warming:
                return
            self._warming += 1
            self._starting += 1
        try:
            self._release(self._start(), True)
        except InvocationError as exc:  # its first request will start one and answer the error
            if not self._closed:  # a start cut short by the server stopping is no failure
                _log_failure(f"{self.function.logical_id} could not be started ahead of its requests", exc)
        finally:
            with self._ready:
                self._warming -= 1
                self._ready.notify_all()

    def invoke(self, event: dict[str, Any], redact: list[str]) -> Any:
        sandbox = self._acquire()
        keep = False
        try:
            if sandbox is None:
                sandbox = self._start()
            result = sandbox.invoke(event, redact)
            keep = True
            return result
        except FunctionError:
            keep = True  # the handler raised: the sandbox lives on, as in Lambda
            raise
        finally:
            if sandbox is not None:
                self._release(sandbox, keep)

    def _acquire(self) -> _Sandbox | None:
        """A warm sandbox, or None when the caller should start one."""
        with self._ready:
            patience: float | None = None  # until when to wait for a busy sandbox rather than start one
            while True:
                if self._closed:
                    raise ServerStopping(f"{self.function.logical_id}: the server is stopping")
                if self._idle:
                    return self._idle.pop()  # the most recently used: the warmest
                if self._warming:  # started ahead of any request: the first to be free
                    self._ready.wait()
                    continue
                if len(self._live) + self._starting < self.limit:
                    if patience is None:
                        waits = self.queue_bursts and bool(self._live)
                        patience = time.monotonic() + (self._cold_start_s if waits else 0.0)
                    remaining = patience - time.monotonic()
                    if remaining <= 0:
                        self._starting += 1
                        return None
                    self._ready.wait(remaining)
                    continue
                self._ready.wait()

    def _start(self) -> _Sandbox:
        sandbox: _Sandbox | None = None
        try:
            sandbox = _Sandbox(self.function, self.artifact)
        except OSError as exc:
            raise SandboxCrashed(f"{self.function.logical_id}: cannot start a sandbox: {exc}") from exc
        finally:
            with self._ready:
                self._starting -= 1
                if sandbox is not None:
                    self._live.add(sandbox)
                closed = self._closed
                self._ready.notify()
        assert sandbox is not None
        if closed:
            self._release(sandbox, False)
            raise ServerStopping(f"{self.function.logical_id}: the server is stopping")
        try:
            sandbox.init()
        except InvocationError:
            self._release(sandbox, False)  # an init that failed is retried in a new sandbox
            raise
        with self._ready:
            self._cold_start_s = sandbox.cold_start_s
        return sandbox

    def _release(self, sandbox: _Sandbox, healthy: bool) -> None:
        """Back to the idle ones if healthy and wanted; otherwise stopped (killed if unhealthy)."""
        with self._ready:
            keep = healthy and not self._closed and sandbox.process.poll() is None
            if keep:
                sandbox.idle_since = time.monotonic()
                self._idle.append(sandbox)
            else:
                self._live.discard(sandbox)
            self._ready.notify()
        if not keep:
            sandbox.stop(grace=_STOP_GRACE_S if healthy else 0)

    def reap(self, idle_before: float) -> list[_Sandbox]:
        """Take out the sandboxes idle since before `idle_before` (monotonic), for the caller to stop."""
        with self._ready:
            stale = [sandbox for sandbox in self._idle if sandbox.idle_since < idle_before]
            if stale:
                self._idle = [sandbox for sandbox in self._idle if sandbox.idle_since >= idle_before]
                self._live.difference_update(stale)
                self._ready.notify_all()
        return stale

    def close(self) -> list[_Sandbox]:
        """Refuse new invocations and hand over every sandbox, for the caller to stop."""
        with self._ready:
            self._closed = True
            sandboxes = list(self._live)
            self._live.clear()
            self._idle.clear()
            self._ready.notify_all()
        return sandboxes


class Functions:
    """Runs each function's invocations in its own pool of sandboxes, as Lambda does.

    A sandbox is a worker process (sandbox.py) that imports the function's module once and then
    serves one invocation at a time; with an `artifact`, from the build folder as Lambda would
    (artifact.py). Concurrent invocations of a function go to different
    sandboxes, started on demand up to `max_concurrency` per function (see _Pool for how long a
    request waits for a busy one first); past that, they wait for one to be free. Nothing starts
    before the first request unless `warm` asks, and idle sandboxes are reused; one
    idle for `idle_seconds` is stopped (as Lambda reclaims idle environments), and the next
    request past the warm ones starts a new one.

    A handler that raises is a 500 and its sandbox stays warm; a sandbox that dies is a 500, one
    that runs past the function's Timeout (the first invocation after a cold start gets what the
    init left of Lambda's 10 s init limit on top) is killed and a 503; both are replaced on demand.
    """

    def __init__(
        self,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        artifact: Artifact | None = None,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if idle_seconds <= 0:
            raise ValueError("idle_seconds must be positive")
        self.max_concurrency = max_concurrency
        self.idle_seconds = idle_seconds
        self.artifact = artifact
        self._lock = threading.Lock()
        self._pools: dict[Function, _Pool] = {}
        self._closed = False
        self._stopping = threading.Event()
        self._reaper: threading.Thread | None = None

    def _reap(self) -> None:
        """Stop sandboxes left idle for `idle_seconds`; checked a few times per period."""
        while not self._stopping.wait(min(5.0, self.idle_seconds / 4)):
            with self._lock:
                pools = list(self._pools.values())
            for pool in pools:
                for sandbox in pool.reap(time.monotonic() - self.idle_seconds):
                    sandbox.stop()

    def live(self) -> int:
        """Sandboxes (worker processes) running now, busy or idle."""
        with self._lock:
            pools = list(self._pools.values())
        return sum(len(pool._live) for pool in pools)

    def invoke(self, function: Function, event: dict[str, Any], *, redact: Iterable[str] = ()) -> Any:
        """The handler's result; InvocationError when there is none.

        `redact`: values (the caller's key) the sandbox masks in its log and its errors.
        """
        return self._pool(function).invoke(event, list(redact))

    def warm(self, function: Function, *, queue_bursts: bool = False) -> None:
        """Start a sandbox of the function ahead of its first request (see _Pool.warm); returns
        once its handler is imported (or failed to be). `queue_bursts`: see _Pool."""
        with contextlib.suppress(ServerStopping):
            pool = self._pool(function)
            pool.queue_bursts = pool.queue_bursts or queue_bursts
            pool.warm()

    def _pool(self, function: Function) -> _Pool:
        with self._lock:
            if self._closed:
                raise ServerStopping(f"{function.logical_id}: the server is stopping")
            pool = self._pools.get(function)
            if pool is None:
                pool = self._pools[function] = _Pool(function, self.max_concurrency, self.artifact)
            if self._reaper is None:
                self._reaper = threading.Thread(target=self._reap, name="sandbox-reaper", daemon=True)
                self._reaper.start()
        return pool

    def close(self) -> None:
        """Stop every sandbox (each gets its stdin closed, then a moment to exit) and reap them."""
        with self._lock:
            self._closed = True
            pools = list(self._pools.values())
        self._stopping.set()
        sandboxes = [sandbox for pool in pools for sandbox in pool.close()]
        for sandbox in sandboxes:
            sandbox.close()
        for sandbox in sandboxes:
            sandbox.stop()


class StreamEmulator:
    """The table's DynamoDB stream, as the stream consumers see it: after writes, one invocation.

    In AWS, entity writes reach the stream functions (the SDK spec builder) through the table's
    stream, batched over a short window. Here a successful write request marks the stream dirty;
    a thread waits `window` seconds of quiet (a burst is one invocation), then invokes each
    stream function in its sandbox. It also runs once at start, as the hourly schedule would.
    """

    def __init__(self, functions: Functions, consumers: list[Function], window: float = 0.2) -> None:
        self._functions = functions
        self._consumers = consumers
        self._window = window
        self._changed = threading.Event()
        self._stopped = threading.Event()
        self._last_write = 0.0
        self.invocations = 0
        self._thread = threading.Thread(target=self._run, name="stream-emulator", daemon=True)

    def start(self) -> None:
        """Begin (once the backend the functions use is up), with a first invocation."""
        if self._consumers and not self._thread.is_alive():
            self._changed.set()
            self._thread.start()

    def written(self) -> None:
        self._last_write = time.monotonic()
        self._changed.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            if not self._changed.wait(timeout=0.5):
                continue
            while time.monotonic() - self._last_write < self._window and not self._stopped.is_set():
                time.sleep(self._window / 4)
            self._changed.clear()
            for function in self._consumers:
                try:
                    self._functions.invoke(
                        function, {"Records": [{"eventSource": "aws:dynamodb", "local": True}]}
                    )
                except InvocationError as exc:
                    if not self._stopped.is_set():  # a build cut short by the server stopping is no failure
                        _log_failure(f"{function.logical_id} failed on the table's stream", exc)
            self.invocations += 1

    def close(self) -> None:
        self._stopped.set()
        self._changed.set()


# Headers that may carry an API key (Authorization too: a key sent there by mistake, as a Bearer
# token, is refused but must not reach the logs): their values are masked in the sandboxes' logs.
KEY_HEADERS = ("service-api-key", "statsig-api-key", "authorization")


def key_values(headers: dict[str, str]) -> list[str]:
    """What to mask for a request: each key header's value, and an Authorization value's
    credentials without their scheme (`Bearer <key>`: the key alone may be logged)."""
    found: list[str] = []
    for name in KEY_HEADERS:
        value = headers.get(name, "")
        credentials = value.partition(" ")[2].strip()
        found.extend(v for v in (value, credentials) if v)
    return found


class Gateway:
    """Routes a request, invokes the function and shapes its response."""

    def __init__(self, api: Api, functions: Functions | None = None) -> None:
        self.routes = RouteTable(api.routes)
        self.functions = functions or Functions()
        self.stream = StreamEmulator(self.functions, api.stream_functions)

    def handle(self, request: HttpRequest) -> HttpResponse:
        request_id = base64.b64encode(os.urandom(10)).decode("ascii")
        preflight = cors.preflight(request.method, request.headers)  # answered by API Gateway itself
        response = (
            HttpResponse(204, preflight) if preflight is not None else self._respond(request, request_id)
        )
        response.headers.extend(cors.response_headers(request.headers) if preflight is None else [])
        response.headers.append(("Apigw-Requestid", request_id))
        return response

    def start(self) -> None:
        """Start what runs beside requests (the stream emulation), once the backend is up."""
        self.stream.start()

    def warm(self, requests: Iterable[tuple[str, str]], *, queue_bursts: bool = False) -> None:
        """Start a sandbox of each function that would answer these requests (`(method, path)`),
        one after the other in that order, ahead of the requests; returns once they are ready. A
        request that comes meanwhile waits for its function's sandbox. `queue_bursts` (the web
        console's files): see _Pool."""
        for function in self.functions_answering(requests):
            self.functions.warm(function, queue_bursts=queue_bursts)

    def functions_answering(self, requests: Iterable[tuple[str, str]]) -> list[Function]:
        """The functions a request to each of these routes invokes, in order, each once."""
        found: dict[str, Function] = {}
        for method, path in requests:
            match = self.routes.match(method, path)
            if match is None:
                continue
            route = match[0]
            found.setdefault(route.function.logical_id, route.function)
        return list(found.values())

    def close(self) -> None:
        """Stop the stream emulation and the functions' sandboxes."""
        self.stream.close()
        self.functions.close()

    def _respond(self, request: HttpRequest, request_id: str) -> HttpResponse:
        match = self.routes.match(request.method, request.target.partition("?")[0])
        if match is None:
            return gateway_error(404, "Not Found")
        route, path_parameters = match
        event = build_event(request, route, path_parameters, request_id=request_id, now=time.time())
        return self._invoke(route, event, key_values(event["headers"]))

    def _invoke(self, route: Route, event: dict[str, Any], secrets: list[str]) -> HttpResponse:
        try:
            result = self.functions.invoke(route.function, event, redact=secrets)
        except InvocationError as exc:
            _log_failure(f"{route.function.logical_id} failed on {route.route_key}", exc)
            return gateway_error(exc.status, exc.message)
        if (
            event["requestContext"]["http"]["method"] not in ("GET", "HEAD", "OPTIONS")
            and str(event.get("rawPath", "")).startswith("/console/")
            and isinstance(result, dict)
            and 200 <= int(result.get("statusCode") or 0) < 300
        ):
            self.stream.written()
        try:
            return to_http_response(result)
        except (TypeError, ValueError) as exc:
            what = f"{route.function.logical_id} returned a malformed response for {route.route_key}"
            _log_failure(f"{what}: {type(exc).__name__}: {exc}")
            return gateway_error(500, "Internal Server Error")


def _log_failure(what: str, error: InvocationError | None = None) -> None:
    """What failed and, for a function error, its stack trace; never the request (it carries the key)."""
    lines = [what if error is None else f"{what}: {error}"]
    if error is not None and error.detail:
        lines.append(error.detail.rstrip("\n"))
    sys.stderr.write("\n".join(lines) + "\n")
    sys.stderr.flush()
