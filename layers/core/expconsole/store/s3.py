"""The events bucket: event objects `events/date=YYYY-MM-DD/<key>.jsonl.gz` (docs/architecture.md,
'Events by day').

Objects are gzip'd JSON lines, written whole (S3 puts are atomic: a reader sees the old
object or the new one, never half of one). Keys derive from content (services.ingest), so a
rewrite replaces rather than duplicates. gzip is written with mtime 0, so the same lines give
the same bytes.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, Protocol

from expconsole import aws, config

PREFIX = "events/"


def _s3() -> Any:
    return aws.client("s3")


def day_prefix(day: str) -> str:
    return f"{PREFIX}date={day}/"


def object_key(day: str, name: str) -> str:
    return f"{day_prefix(day)}{name}.jsonl.gz"


def encode(lines: list[str]) -> bytes:
    data = ("\n".join(lines) + "\n").encode("utf-8")
    return gzip.compress(data, compresslevel=6, mtime=0)


def decode(body: bytes) -> list[str]:
    return [line for line in gzip.decompress(body).decode("utf-8").split("\n") if line]


def put(key: str, body: bytes) -> None:
    """Write one object (whole). Raises botocore errors on failure."""
    _s3().put_object(Bucket=config.events_bucket(), Key=key, Body=body, ContentType="application/x-ndjson")


def get(key: str) -> bytes:
    body: bytes = _s3().get_object(Bucket=config.events_bucket(), Key=key)["Body"].read()
    return body


def get_or_none(key: str) -> bytes | None:
    """The object's bytes, or None when it does not exist (yet)."""
    from botocore.exceptions import ClientError

    try:
        return get(key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise


class Writer(Protocol):
    def write(self, data: bytes, /) -> object: ...


def download(key: str, out: Writer, chunk_bytes: int = 1 << 20) -> dict[str, str]:
    """Stream an object into `out` without holding it in memory; its user metadata (x-amz-meta-*).

    Raises botocore's ClientError (`NoSuchKey`, or `AccessDenied` for a missing key when the
    caller may not list the bucket).
    """
    response = _s3().get_object(Bucket=config.events_bucket(), Key=key)
    body = response["Body"]
    try:
        for chunk in iter(lambda: body.read(chunk_bytes), b""):
            out.write(chunk)
    finally:
        body.close()
    return dict(response.get("Metadata") or {})


def put_file(key: str, data: BinaryIO, content_type: str = "application/x-ndjson") -> None:
    """Write one object from an open file (whole; a file of up to 5 GB)."""
    _s3().put_object(Bucket=config.events_bucket(), Key=key, Body=data, ContentType=content_type)


def upload(
    path: str, key: str, metadata: dict[str, str] | None = None, progress: Callable[[int], None] | None = None
) -> None:
    """Upload a local file (multipart when large); `progress` is called with each increment of bytes sent."""
    extra = {"Metadata": metadata} if metadata else None
    _s3().upload_file(path, config.events_bucket(), key, ExtraArgs=extra, Callback=progress)


def keys(prefix: str) -> Iterator[str]:
    paginator = _s3().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=config.events_bucket(), Prefix=prefix):
        for item in page.get("Contents", []):
            yield item["Key"]


def create_bucket(name: str | None = None) -> None:
    """Create the events bucket if missing (tests and benchmarks; template.yaml creates it in AWS)."""
    from botocore.exceptions import ClientError

    bucket = name or config.events_bucket()
    try:
        _s3().head_bucket(Bucket=bucket)
    except ClientError:
        _s3().create_bucket(Bucket=bucket)


# --- pulse: compacted days and per-day unit aggregates (written by the pulse function) -------------

COMPACTED_PREFIX = "compacted/"
PULSE_PREFIX = "pulse/"


def put_object(key: str, body: bytes, content_type: str = "application/octet-stream") -> None:
    """Write any object of the bucket (whole), e.g. Parquet or a JSON manifest."""
    _s3().put_object(Bucket=config.events_bucket(), Key=key, Body=body, ContentType=content_type)


def is_missing(exc: Exception) -> bool:
    """Whether a botocore error says the object does not exist."""
    response = getattr(exc, "response", None) or {}
    return response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound")


def get_if_exists(key: str) -> bytes | None:
    """The object's bytes, or None when there is no such object."""
    from botocore.exceptions import ClientError

    try:
        return get(key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return None
        raise


def delete_objects(keys: list[str]) -> None:
    for start in range(0, len(keys), 1000):
        chunk = keys[start : start + 1000]
        _s3().delete_objects(
            Bucket=config.events_bucket(), Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True}
        )


# --- the SDK documents: the spec document and id-list files (written by the specs builder) ----------

SDK_PREFIX = "sdk/"


def put_document(
    key: str, body: bytes, metadata: dict[str, str], content_type: str, content_encoding: str | None = None
) -> None:
    """Write a served document whole, with user metadata (what a reader needs without the body)."""
    extra = {"ContentEncoding": content_encoding} if content_encoding else {}
    _s3().put_object(
        Bucket=config.events_bucket(),
        Key=key,
        Body=body,
        Metadata=metadata,
        ContentType=content_type,
        **extra,
    )


def get_document(
    key: str, if_none_match: str | None = None
) -> tuple[str, bytes | None, dict[str, str]] | None:
    """(ETag, body, user metadata) of a document; body None when it still has ETag `if_none_match`.

    None when there is no such object.
    """
    from botocore.exceptions import ClientError

    extra = {"IfNoneMatch": if_none_match} if if_none_match else {}
    try:
        response = _s3().get_object(Bucket=config.events_bucket(), Key=key, **extra)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        if code in ("304", "NotModified") and if_none_match:
            return if_none_match, None, {}
        if code in ("NoSuchKey", "404", "NotFound"):
            return None
        raise
    return response["ETag"], response["Body"].read(), dict(response.get("Metadata") or {})


def get_range(key: str, start: int) -> tuple[bytes, int] | None:
    """The bytes of an object from `start` on, and its whole size; None when there is no object."""
    from botocore.exceptions import ClientError

    try:
        head = _s3().head_object(Bucket=config.events_bucket(), Key=key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            return None
        raise
    size = int(head["ContentLength"])
    if start >= size:
        return b"", size
    response = _s3().get_object(Bucket=config.events_bucket(), Key=key, Range=f"bytes={start}-")
    return response["Body"].read(), size


def presigned_url(key: str, expires_seconds: int = 300) -> str:
    """A time-limited GET URL of one object (for documents over a Lambda response's 6 MB)."""
    return str(
        _s3().generate_presigned_url(
            "get_object", Params={"Bucket": config.events_bucket(), "Key": key}, ExpiresIn=expires_seconds
        )
    )
