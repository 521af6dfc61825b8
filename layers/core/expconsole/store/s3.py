"""The events bucket: event objects `events/date=YYYY-MM-DD/<key>.jsonl.gz` (DESIGN.md).

Objects are gzip'd JSON lines, written whole (S3 puts are atomic: a reader sees the old
object or the new one, never half of one). Keys derive from content (services.ingest), so a
rewrite replaces rather than duplicates. gzip is written with mtime 0, so the same lines give
the same bytes.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from typing import Any

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
    return _s3().get_object(Bucket=config.events_bucket(), Key=key)["Body"].read()


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
