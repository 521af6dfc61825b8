"""Where DynamoDB and S3 live for the local server: moto embedded in this process, or the account.

The embedded backend is moto's server on 127.0.0.1, single-threaded on purpose: moto applies a
DynamoDB transaction in several steps, and our optimistic locking relies on conditional
transactional writes being atomic, which one request at a time guarantees.

Persistence is a journal. Every write request the backend answers with a 2xx is appended to
`<data-dir>/journal.jsonl` (and fsynced) before the answer leaves, and the journal is replayed
through a fresh moto at the next start. Reads are not journaled and a failed write changed
nothing, so the replay rebuilds exactly the state clients last saw. A lock file keeps a second
process off the same data dir, and `backend.json` tells `expconsole keys` where a running
server's backend listens, so its writes are journaled by that server.

A journal only grows: every overwrite of an item or object, every deleted one, stays in it and
is replayed at each start. So a start whose replay was long rewrites it as the state it rebuilt
(compaction): the table and bucket set-up entries as they were, then each current item and
object once. It is written beside the journal and renamed over it, so a crash leaves the old
journal or the new one, never a mix.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import socket
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote, urlsplit

from expconsole import aws
from expconsole.store import dynamo

LOCAL_TABLE = "expconsole"
LOCAL_BUCKET = "expconsole-events"
LOCAL_REGION = "us-east-1"
JOURNAL_FILE = "journal.jsonl"
# A start compacts the journal when it replayed at least this many entries and the state they
# built is at most half as many: below that, replay takes well under a second.
COMPACT_AFTER = 1_000
_BATCH_WRITE_ITEMS = 25  # DynamoDB's BatchWriteItem limit
_DYNAMODB_TABLE_SETUP = frozenset({"CreateTable", "UpdateTable", "DeleteTable", "UpdateTimeToLive"})
_DYNAMODB_JSON = "application/x-amz-json-1.0"
INFO_FILE = "backend.json"
LOCK_FILE = "lock"

_DYNAMODB_WRITES = frozenset(
    {
        "CreateTable",
        "UpdateTable",
        "DeleteTable",
        "UpdateTimeToLive",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
        "TransactWriteItems",
    }
)
_S3_WRITES = frozenset({"PUT", "POST", "DELETE"})
_CREDENTIAL_SCOPE = re.compile(r"Credential=[^/,\s]+/\d{8}/([^/]+)/([^/]+)/aws4_request")
_REPLAYED_HEADERS = frozenset({"host", "content-type", "content-md5", "content-encoding"})
_LOCAL_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
# Unset in local mode: each would send clients elsewhere or fail them before they reach moto.
_LOCAL_UNSET = (
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_S3",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
)


class LocalError(Exception):
    """A problem the user can fix (busy data dir, bad key, missing stack); the message says how."""

    exit_code = 1


class DataDirBusy(LocalError):
    """Another process holds the data dir's lock."""


def use_backend(endpoint: str | None, table: str, bucket: str) -> Callable[[], None]:
    """Point this process's AWS clients at a backend (None: the account) and return how to undo it.

    botocore reads these variables when a client is created, so cached clients are dropped.
    """
    changes: dict[str, str | None] = {"TABLE_NAME": table, "EVENTS_BUCKET": bucket}
    if endpoint is not None:
        changes.update(dict.fromkeys(_LOCAL_UNSET))
        changes.update(_LOCAL_CREDENTIALS)
        changes.update(AWS_ENDPOINT_URL=endpoint, AWS_DEFAULT_REGION=LOCAL_REGION, AWS_REGION=LOCAL_REGION)
    saved = {name: os.environ.get(name) for name in changes}
    _set_environ(changes)

    def restore() -> None:
        _set_environ(saved)

    return restore


def _set_environ(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    aws.reset()


def aws_resources(stack_name: str) -> tuple[str, str]:
    """The account's table and bucket: TABLE_NAME/EVENTS_BUCKET if set, else the stack's outputs."""
    import boto3

    # botocore reads AWS_DEFAULT_REGION, not AWS_REGION (which the AWS CLI also reads): without
    # this check the S3 client quietly falls back to us-east-1 while the others fail.
    if not boto3.Session().region_name:
        raise LocalError(
            "no AWS region: set AWS_DEFAULT_REGION (AWS_REGION alone is not read) or a region in the "
            "profile (AWS_PROFILE), to the stack's region"
        )
    table, bucket = os.environ.get("TABLE_NAME"), os.environ.get("EVENTS_BUCKET")
    if table and bucket:
        return table, bucket
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        stacks = aws.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    except (BotoCoreError, ClientError) as exc:
        raise LocalError(
            f"cannot read the outputs of stack {stack_name!r} ({exc}); deploy it, pass --stack-name, "
            "or set TABLE_NAME and EVENTS_BUCKET"
        ) from exc
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stacks[0].get("Outputs") or []}
    table, bucket = table or outputs.get("TableName"), bucket or outputs.get("EventsBucketName")
    if not table or not bucket:
        raise LocalError(f"stack {stack_name!r} has no TableName and EventsBucketName outputs")
    return table, bucket


def running_backend(data_dir: Path) -> dict[str, Any] | None:
    """The backend.json of a server running on this data dir, if its endpoint answers."""
    try:
        info = json.loads((data_dir / INFO_FILE).read_text(encoding="utf-8"))
        address = urlsplit(info["endpoint"])
        with socket.create_connection((address.hostname, address.port), timeout=1):
            return dict(info)
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Journal:
    """The append-only log of the backend's successful writes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: Any = None
        # What a compaction keeps as it was, gathered by the replay: the entries that make tables
        # and buckets (and set them up or remove them), in order; items and objects are rewritten
        # from state.
        self.setup: list[dict[str, Any]] = []

    def replay(self, app: Callable[..., Any]) -> int:
        """Apply every entry through a moto WSGI app; a torn last line (a crash mid-write) is cut off."""
        self.setup = []
        if not self.path.exists():
            return 0
        from werkzeug.test import Client

        client = Client(app)
        applied, good_bytes = 0, 0
        with self.path.open("rb") as journal:
            for line in journal:
                if not line.endswith(b"\n"):
                    break
                try:
                    entry = json.loads(line)
                except ValueError as exc:
                    raise LocalError(
                        f"{self.path} is damaged at entry {applied + 1}; "
                        "move the data dir aside or use --ephemeral"
                    ) from exc
                _replay_entry(client, entry, f"{self.path} entry {applied + 1}")
                if _is_setup(entry):
                    self.setup.append(entry)
                applied += 1
                good_bytes += len(line)
        if good_bytes < self.path.stat().st_size:
            sys.stderr.write(
                f"{self.path}: dropped an incomplete last entry (the previous run was killed mid-write)\n"
            )
            os.truncate(self.path, good_bytes)
        return applied

    def open(self) -> None:
        self._file = self.path.open("ab")

    def compact(self, entries: Iterable[dict[str, Any]]) -> int:
        """Replace the journal with `entries` (written beside it, then renamed over it); their count."""
        staging = self.path.with_name(self.path.name + ".compacting")
        written = 0
        with staging.open("wb") as out:
            for entry in entries:
                out.write(json.dumps(entry, separators=(",", ":")).encode("utf-8") + b"\n")
                written += 1
            out.flush()
            os.fsync(out.fileno())
        staging.replace(self.path)
        if hasattr(os, "O_DIRECTORY"):  # the rename itself, durable (POSIX)
            directory = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        return written

    def append(self, entry: dict[str, Any]) -> None:
        self._file.write(json.dumps(entry, separators=(",", ":")).encode("utf-8") + b"\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _replay_entry(client: Any, entry: dict[str, Any], where: str) -> None:
    scope = f"local/20000101/{entry['region']}/{entry['service']}/aws4_request"
    headers = {
        **entry["headers"],
        "authorization": f"AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders=host",
    }
    response = client.open(
        entry["uri"], method=entry["method"], headers=headers, data=base64.b64decode(entry["body"])
    )
    if not 200 <= response.status_code < 300:
        raise LocalError(
            f"{where} ({entry['method']} {entry['service']}) failed on replay with {response.status}: "
            f"{response.get_data(as_text=True)[:300]}; move the data dir aside or use --ephemeral"
        )


def _is_setup(entry: dict[str, Any]) -> bool:
    """A table's or a bucket's own write (create, configure, delete), not an item's or an object's."""
    if entry["service"] == "dynamodb":
        target = entry["headers"].get("x-amz-target", "")
        return target.rpartition(".")[2] in _DYNAMODB_TABLE_SETUP
    path = urlsplit(entry["uri"]).path.strip("/")
    # PUT /bucket (create), PUT /bucket?lifecycle and the like; POST /bucket?delete removes objects.
    return "/" not in path and entry["method"] in {"PUT", "DELETE"}


def _state_entries(setup: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The journal of the backend's current state: `setup` as it was, then every item in batches
    and every object with its content type and metadata, as a client would write them."""
    yield from setup
    dynamodb, s3 = aws.client("dynamodb"), aws.client("s3")
    for table in _pages(dynamodb, "list_tables", "TableNames"):
        items = _pages(dynamodb, "scan", "Items", TableName=table, ConsistentRead=True)
        for batch in _chunks(items, _BATCH_WRITE_ITEMS):
            body = {"RequestItems": {table: [{"PutRequest": {"Item": item}} for item in batch]}}
            yield _entry(
                "dynamodb",
                "POST",
                "/",
                {"content-type": _DYNAMODB_JSON, "x-amz-target": "DynamoDB_20120810.BatchWriteItem"},
                json.dumps(body, separators=(",", ":")).encode("utf-8"),
            )
    for bucket in s3.list_buckets()["Buckets"]:
        for listed in _pages(s3, "list_objects_v2", "Contents", Bucket=bucket["Name"]):
            obj = s3.get_object(Bucket=bucket["Name"], Key=listed["Key"])
            headers = {"content-type": obj.get("ContentType") or "binary/octet-stream"}
            if obj.get("ContentEncoding"):
                headers["content-encoding"] = obj["ContentEncoding"]
            headers.update({f"x-amz-meta-{name}": value for name, value in obj.get("Metadata", {}).items()})
            uri = f"/{quote(bucket['Name'])}/{quote(listed['Key'], safe='/~')}"
            yield _entry("s3", "PUT", uri, headers, obj["Body"].read())


def _entry(service: str, method: str, uri: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    return {
        "service": service,
        "region": LOCAL_REGION,
        "method": method,
        "uri": uri,
        "headers": headers,
        "body": base64.b64encode(body).decode("ascii"),
    }


def _pages(client: Any, operation: str, key: str, **params: Any) -> Iterator[Any]:
    for page in client.get_paginator(operation).paginate(**params):
        yield from page.get(key, [])


def _chunks(values: Iterable[Any], size: int) -> Iterator[list[Any]]:
    chunk: list[Any] = []
    for value in values:
        chunk.append(value)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _live_records() -> int:
    """How many entries the compacted journal would hold, near enough: items / 25 plus objects."""
    dynamodb, s3 = aws.client("dynamodb"), aws.client("s3")
    items: int = sum(
        page["Count"]
        for table in _pages(dynamodb, "list_tables", "TableNames")
        for page in dynamodb.get_paginator("scan").paginate(TableName=table, Select="COUNT")
    )
    objects: int = sum(
        page.get("KeyCount", 0)
        for bucket in s3.list_buckets()["Buckets"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket["Name"])
    )
    return -(-items // _BATCH_WRITE_ITEMS) + objects


class JournalMiddleware:
    """WSGI middleware around moto that journals each write moto answers with a 2xx."""

    def __init__(self, app: Callable[..., Iterable[bytes]], journal: Journal) -> None:
        self.app = app
        self.journal = journal

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        entry = _write_request(environ)
        if entry is None:
            return self.app(environ, start_response)
        from werkzeug.wsgi import get_input_stream

        body = get_input_stream(environ).read()
        environ["wsgi.input"] = io.BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        statuses: list[str] = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            statuses.append(status)
            return start_response(status, headers, exc_info)

        result = self.app(environ, capture)
        try:
            content = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
        if statuses and statuses[-1].startswith("2"):
            entry["body"] = base64.b64encode(body).decode("ascii")
            self.journal.append(entry)
        return [content]


def _write_request(environ: dict[str, Any]) -> dict[str, Any] | None:
    """The journal entry (without body) for a DynamoDB or S3 write request; None for anything else."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    scope = _CREDENTIAL_SCOPE.search(environ.get("HTTP_AUTHORIZATION", ""))
    if scope:
        region, service = scope.group(1), scope.group(2)
    elif target.startswith("DynamoDB_"):
        region, service = LOCAL_REGION, "dynamodb"
    else:
        return None
    method = environ["REQUEST_METHOD"]
    if not (
        (service == "dynamodb" and target.rpartition(".")[2] in _DYNAMODB_WRITES)
        or (service == "s3" and method in _S3_WRITES)
    ):
        return None
    query = environ.get("QUERY_STRING", "")
    uri = environ.get("RAW_URI") or quote(environ.get("PATH_INFO", "/")) + (f"?{query}" if query else "")
    headers: dict[str, str] = {}
    if environ.get("CONTENT_TYPE"):
        headers["content-type"] = environ["CONTENT_TYPE"]
    for key, value in environ.items():
        if not key.startswith("HTTP_"):
            continue
        name = key[5:].lower().replace("_", "-")
        if name in _REPLAYED_HEADERS or (name.startswith("x-amz-") and name != "x-amz-security-token"):
            headers[name] = value
    return {"service": service, "region": region, "method": method, "uri": uri, "headers": headers}


class _DataDirLock:
    """An exclusive OS lock on `<data-dir>/lock`, released by the OS if the process dies."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if sys.platform == "win32":  # not os.name: mypy narrows on sys.platform alone
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _copy_tables_once_per_transaction() -> None:
    """Make moto back up each table once per transaction, not once per item in it.

    moto's `transact_write_items` deep-copies the whole table for every item of a transaction
    (its rollback copy), so a two-item write on a table of a few thousand items takes a second
    and the single-threaded backend queues every other request behind it. One copy per table
    is all the rollback needs. The patch swaps moto's `copy` for the call's duration with one
    that copies each Table object once; every other deepcopy is untouched.
    """
    from moto.dynamodb import models
    from moto.dynamodb.models.table import Table

    backend = models.DynamoDBBackend
    if getattr(backend.transact_write_items, "_expconsole_patched", False):
        return
    original = backend.transact_write_items
    # moto's module imports `copy` without exporting it (hence attr-defined): the name is patched there.
    real_copy = models.copy  # type: ignore[attr-defined]

    class _TablesOnce:
        def __init__(self) -> None:
            self._tables: dict[int, Any] = {}

        def deepcopy(self, obj: Any, memo: Any = None) -> Any:
            if not isinstance(obj, Table):
                return real_copy.deepcopy(obj, memo)
            if id(obj) not in self._tables:
                self._tables[id(obj)] = real_copy.deepcopy(obj, memo)
            return self._tables[id(obj)]

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        models.copy = _TablesOnce()  # type: ignore[attr-defined,assignment]
        try:
            return original(self, transact_items)
        finally:
            models.copy = real_copy  # type: ignore[attr-defined]

    transact_write_items._expconsole_patched = True  # type: ignore[attr-defined]
    backend.transact_write_items = transact_write_items  # type: ignore[method-assign]


class EmbeddedBackend:
    """moto's DynamoDB and S3 on 127.0.0.1; persisted under `data_dir`, or in memory when it is None.

    moto keeps its state in module globals, so a process holds one embedded backend at a time,
    and each start resets that state before replaying its journal.
    """

    _active: ClassVar[bool] = False
    _active_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, data_dir: Path | None) -> None:
        self.data_dir = data_dir
        self.endpoint = ""
        self.replayed = 0
        self.compacted: tuple[int, int] | None = None  # (entries replayed, entries now) when compacted
        self._owns_slot = False
        self._lock = _DataDirLock(data_dir) if data_dir is not None else None
        self._journal = Journal(data_dir / JOURNAL_FILE) if data_dir is not None else None
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self._restore_env: Callable[[], None] | None = None

    def start(self) -> str:
        """Start serving (replaying the journal first) and point this process's clients at it."""
        with EmbeddedBackend._active_lock:
            if EmbeddedBackend._active:
                raise LocalError(
                    "an embedded backend is already running in this process (moto's state is global)"
                )
            EmbeddedBackend._active = self._owns_slot = True
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self.endpoint

    def _start(self) -> None:
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            MotoRequestHandler,
            create_backend_app,
        )
        from werkzeug.serving import make_server
        from werkzeug.test import Client

        _copy_tables_once_per_transaction()

        class QuietHandler(MotoRequestHandler):
            def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
                """Silent: the local server logs its own requests, not each backend call."""

        if self.data_dir is not None and self._lock is not None:
            self.data_dir.mkdir(parents=True, exist_ok=True)
            if not self._lock.acquire():
                raise DataDirBusy(_busy_message(self.data_dir))
        app = DomainDispatcherApplication(create_backend_app)
        Client(app).post("/moto-api/reset")
        wsgi: Callable[..., Any] = app
        if self._journal is not None:
            self.replayed = self._journal.replay(app)
            wsgi = JournalMiddleware(app, self._journal)
        self._server = make_server("127.0.0.1", 0, wsgi, threaded=False, request_handler=QuietHandler)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="expconsole-backend",
            daemon=True,
        )
        self._thread.start()
        self.endpoint = f"http://127.0.0.1:{self._server.server_port}"
        self._restore_env = use_backend(self.endpoint, LOCAL_TABLE, LOCAL_BUCKET)
        if self._journal is not None:
            # Nothing but this process knows the endpoint yet (backend.json is written below),
            # so no write can reach the journal while it is compacted; only reads happen here.
            self._compact_if_long()
            self._journal.open()
        dynamo.create_table(LOCAL_TABLE)
        _ensure_bucket(LOCAL_BUCKET)
        if self.data_dir is not None:
            info = {
                "endpoint": self.endpoint,
                "pid": os.getpid(),
                "region": LOCAL_REGION,
                "tableName": LOCAL_TABLE,
                "eventsBucket": LOCAL_BUCKET,
            }
            staging = self.data_dir / f"{INFO_FILE}.tmp"
            staging.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
            staging.replace(self.data_dir / INFO_FILE)

    def _compact_if_long(self) -> None:
        assert self._journal is not None
        if self.replayed < COMPACT_AFTER:
            return
        setup = self._journal.setup
        if 2 * (_live_records() + len(setup)) > self.replayed:
            return
        written = self._journal.compact(_state_entries(setup))
        self.compacted = (self.replayed, written)
        sys.stderr.write(
            f"{self._journal.path}: compacted {self.replayed:,} entries into {written:,} "
            "(the current state)\n"
        )

    def stop(self) -> None:
        """Stop serving, close the journal, release the data dir and restore the environment."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._journal is not None:
            self._journal.close()
        if self._lock is not None and self._lock.held and self.data_dir is not None:
            with contextlib.suppress(FileNotFoundError):
                (self.data_dir / INFO_FILE).unlink()
            self._lock.release()
        if self._restore_env is not None:
            self._restore_env()
            self._restore_env = None
        if self._owns_slot:
            with EmbeddedBackend._active_lock:
                EmbeddedBackend._active = self._owns_slot = False


def _ensure_bucket(name: str) -> None:
    from botocore.exceptions import ClientError

    s3 = aws.client("s3")
    try:
        s3.head_bucket(Bucket=name)
    except ClientError:
        s3.create_bucket(Bucket=name)


def _busy_message(data_dir: Path) -> str:
    try:
        pid = json.loads((data_dir / INFO_FILE).read_text(encoding="utf-8"))["pid"]
        owner = f"another expconsole process (pid {pid})"
    except (OSError, ValueError, KeyError):
        owner = "another expconsole process"
    return f"data dir {data_dir} is in use by {owner}; stop it, or pass another --data-dir, or --ephemeral"
