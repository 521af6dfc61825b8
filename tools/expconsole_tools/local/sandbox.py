"""A Lambda sandbox of the local server: one worker process that runs one function's handler.

Lambda runs concurrent invocations of a function in separate sandboxes, each a process that
imports the handler's module once (its cold start) and then serves one invocation at a time.
The local server does the same: `gateway.Functions` keeps a pool of these workers per function
and starts one (`python -c <bootstrap>` running `main()` below) when a request finds every
sandbox of its function busy. Handlers therefore never share a process, so Powertools' class
attributes (`BaseRouter.current_event`), module globals and cached clients are per sandbox, as
in Lambda, and concurrent requests really overlap, down to DynamoDB's conditional writes.

A worker inherits the server's environment (AWS_ENDPOINT_URL pointing at the embedded moto,
dummy credentials, TABLE_NAME, EVENTS_BUCKET, the template's global variables) and talks to
moto over HTTP like any client. It imports nothing of its own beyond the standard library, so
its cold start is the interpreter's plus the handler's, as on Lambda.

Protocol: JSON objects, each preceded by its length (4 bytes, big-endian), read from the
worker's stdin and answered on its stdout. The worker moves those pipes aside at start, so
whatever a handler prints (stdout or stderr) goes to the server's stderr, which is the log.

    server -> worker  {"type": "init", "function", "module", "file", "handler", "memory", "timeout",
                       "environment", "path"?, "runtime_path"?}
    worker -> server  {"type": "ready"}                 or {"type": "error", "error": {...}}
    server -> worker  {"type": "invoke", "event", "redact": [secrets]}
    worker -> server  {"type": "result", "result": ...} or {"type": "error", "error": {...}}

An error is Lambda's: {"errorType", "errorMessage", "stackTrace"}. A worker exits when its stdin
closes (the server stopping it, or dying), and on its own if the server process goes away while
a handler is still running. It ignores Ctrl-C: the server stops its workers itself.

The values in `redact` (the request's key headers, gateway.key_values) are masked in everything
the worker writes, its log lines and the errors it reports: handlers see the key, the log never
does.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import struct
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable
from typing import IO, Any

REGION = "us-east-1"
ACCOUNT_ID = "123456789012"
MASK = "***"
_HEADER = struct.Struct(">I")
_MIN_SECRET = 6
_REMEMBERED_SECRETS = 64
_PARENT_CHECK_S = 1.0

# Run by the server as `python -P -c BOOTSTRAP <folders holding expconsole_tools and expconsole>`
# (os.pathsep between), so the worker uses the server's own copies whatever the working directory.
BOOTSTRAP = (
    "import os, sys; sys.path[:0] = sys.argv.pop(1).split(os.pathsep); "
    "from expconsole_tools.local.sandbox import main; sys.exit(main())"
)
# For a built function (artifact.py): `python3.12 -I -S -B -c BUILT_BOOTSTRAP <this file>` runs this
# file without importing any package, so the worker's sys.path holds the standard library only
# until `init` gives it the function's own folders. Hence this module imports the stdlib alone.
BUILT_BOOTSTRAP = (
    "import runpy, sys; sys.exit(runpy.run_path(sys.argv.pop(1), run_name='lambda_sandbox')['main']())"
)


def write_message(stream: IO[bytes], message: dict[str, Any]) -> None:
    """Send one message: its length, then its JSON."""
    data = json.dumps(message, separators=(",", ":")).encode("utf-8")
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_message(stream: IO[bytes]) -> dict[str, Any] | None:
    """The next message; None at the end of the stream. EOFError if it stops mid-message."""
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    data = _read_exactly(stream, _HEADER.unpack(header)[0])
    if data is None:
        raise EOFError("the stream ended inside a message")
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("a message must be a JSON object")
    return message


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks: list[bytes] = []
    remaining = size
    while remaining > 0:
        chunk = stream.read(remaining)
        if not chunk:
            if chunks:
                raise EOFError("the stream ended inside a message")
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


class LambdaContext:
    """The attributes of a Lambda context that handlers and Powertools read."""

    def __init__(self, function: str, memory_mb: int, timeout_s: float) -> None:
        self.function_name = function
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT_ID}:function:{function}"
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function}"
        self.log_stream_name = f"local/{os.getpid()}"
        self.identity = None
        self.client_context = None
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class _Secrets:
    """The secrets seen in recent invocations, masked in whatever the worker writes."""

    def __init__(self) -> None:
        self._values: deque[str] = deque(maxlen=_REMEMBERED_SECRETS)

    def add(self, values: Any) -> None:
        for value in values if isinstance(values, list) else []:
            if isinstance(value, str) and len(value) >= _MIN_SECRET and value not in self._values:
                self._values.append(value)

    def mask(self, text: str) -> str:
        for value in sorted(self._values, key=len, reverse=True):
            if value in text:
                text = text.replace(value, MASK)
        return text


class _MaskingStream:
    """A text stream (the worker's sys.stdout or sys.stderr) that masks secrets in what it writes."""

    def __init__(self, stream: Any, secrets: _Secrets) -> None:
        self._stream = stream
        self._secrets = secrets

    def write(self, text: str) -> int:
        self._stream.write(self._secrets.mask(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Worker:
    """The sandbox's one function: its handler once imported, and the replies it sends."""

    def __init__(self, replies: IO[bytes], secrets: _Secrets) -> None:
        self.replies = replies
        self.secrets = secrets
        self.function = ""
        self.memory_mb = 128
        self.timeout_s = 3.0
        self.handler: Callable[[Any, Any], Any] | None = None

    def init(self, message: dict[str, Any]) -> bool:
        """Import the handler's module (the cold start); False if it cannot be used."""
        self.function = str(message["function"])
        self.memory_mb = int(message.get("memory", 128))
        self.timeout_s = float(message.get("timeout", 3))
        # The function's own variables, and its name, as Lambda sets them.
        os.environ.update({str(k): str(v) for k, v in (message.get("environment") or {}).items()})
        os.environ["AWS_LAMBDA_FUNCTION_NAME"] = self.function
        path, handler_name = str(message["file"]), str(message["handler"])
        # The function's code folder comes first on sys.path, as Lambda's task root does; a built
        # function also names its layers' folders (before the standard library, as /opt/python
        # is) and the runtime's packages (after it, as /var/runtime is).
        sys.path[:0] = [str(p) for p in message.get("path") or [os.path.dirname(path)]]
        sys.path.extend(str(p) for p in message.get("runtime_path") or [])
        try:
            spec = importlib.util.spec_from_file_location(str(message["module"]), path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        except Exception as exc:
            self.reply_error("Runtime.ImportModuleError", exc, f"Unable to import module {path}: ")
            return False
        handler = getattr(module, handler_name, None)
        if not callable(handler):
            message_text = f"Handler {handler_name!r} missing on module {path}"
            self.reply({"type": "error", "error": _error("Runtime.HandlerNotFound", message_text, [])})
            return False
        self.handler = handler
        self.reply({"type": "ready"})
        return True

    def invoke(self, message: dict[str, Any]) -> None:
        assert self.handler is not None
        self.secrets.add(message.get("redact"))
        context = LambdaContext(self.function, self.memory_mb, self.timeout_s)
        try:
            result = self.handler(message.get("event"), context)
        except Exception as exc:
            self.reply_error(type(exc).__name__, exc)
            return
        try:
            data = json.dumps({"type": "result", "result": result}, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            self.reply_error("Runtime.MarshalError", exc, "Unable to marshal response: ")
            return
        self._send(data.encode("utf-8"))

    def reply_error(self, error_type: str, exc: BaseException, prefix: str = "") -> None:
        """Report an exception as Lambda does, without this module's frames and with secrets masked."""
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
            tb = tb.tb_next
        stack = [self.secrets.mask(line) for line in traceback.format_exception(type(exc), exc, tb)]
        message = self.secrets.mask(f"{prefix}{exc}")
        self.reply({"type": "error", "error": _error(error_type, message, stack)})

    def reply(self, message: dict[str, Any]) -> None:
        self._send(json.dumps(message, separators=(",", ":")).encode("utf-8"))

    def _send(self, data: bytes) -> None:
        self.replies.write(_HEADER.pack(len(data)) + data)
        self.replies.flush()


def _error(error_type: str, message: str, stack: list[str]) -> dict[str, Any]:
    return {"errorType": error_type, "errorMessage": message, "stackTrace": stack}


def _watch_parent(parent: int) -> None:
    """Exit if the server goes away while a handler runs (an idle worker sees its stdin close)."""
    while True:
        time.sleep(_PARENT_CHECK_S)
        if os.getppid() != parent:
            os._exit(0)


def _take_pipes() -> tuple[IO[bytes], IO[bytes]]:
    """The protocol's pipes, moved off fds 0 and 1: stdin becomes empty, stdout joins stderr."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return requests, replies


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(os.getppid(),), name="parent-watch", daemon=True).start()
    requests, replies = _take_pipes()
    secrets = _Secrets()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None:
            stream.reconfigure(line_buffering=True)
            setattr(sys, name, _MaskingStream(stream, secrets))
    worker = _Worker(replies, secrets)
    try:
        while (message := read_message(requests)) is not None:
            kind = message.get("type")
            if kind == "init" and worker.handler is None:
                if not worker.init(message):
                    return 1
            elif kind == "invoke" and worker.handler is not None:
                worker.invoke(message)
            else:
                sys.stderr.write(f"sandbox {os.getpid()}: unexpected {kind!r} message\n")
                return 2
    except (EOFError, ValueError, BrokenPipeError) as exc:
        sys.stderr.write(f"sandbox {os.getpid()}: protocol error, exiting: {exc}\n")
        return 2
    # Stopped: leave at once, as a sandbox that Lambda shuts down does, without the interpreter's
    # slow teardown of everything the handler imported (or waiting for threads it started).
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    os._exit(0)
