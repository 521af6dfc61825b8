"""The built SDK documents in S3: building them when entities change, and serving them.

A build (`rebuild`) reads every entity kind the SDKs evaluate, builds the v1 document
(services.sdk.specs) and its v2 form (services.sdk.v2), and the id-list files of id-list
segments, and writes them to the events bucket under `sdk/`. It runs when entities change: in
AWS the table's DynamoDB stream invokes the specs function (batched over a short window, so a
burst of changes is one build); the local server invokes the same function after writes. A build
whose content equals the stored one writes nothing, so `time` moves only on real changes.

Downloads read only S3 (`current`), never the table; the function keeps the last body and its
ETag in memory and asks S3 for the object only if it changed (If-None-Match).

Objects:
| key | what |
|---|---|
| `s3://<bucket>/sdk/specs/v1.json.gz` | the v1 document, gzip; metadata `time`, `digest` |
| `s3://<bucket>/sdk/specs/v2.json.gz` | the v2 document, gzip; metadata `time` |
| `s3://<bucket>/sdk/id_lists/index.json` | `{segment: {fileID, size, creationTime, version}}` |
| `s3://<bucket>/sdk/id_lists/<segment>/<fileID>.txt` | `+<hash>` lines, one per id (the SDK's format) |
"""

from __future__ import annotations

import gzip
import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from expconsole import kinds
from expconsole.services.common.lifecycle import is_archived
from expconsole.services.sdk import specs
from expconsole.services.sdk.hashing import id_list_hash
from expconsole.store import dynamo, s3, segment_ids

V1_KEY = f"{s3.SDK_PREFIX}specs/v1.json.gz"
V2_KEY = f"{s3.SDK_PREFIX}specs/v2.json.gz"
ID_LISTS_INDEX = f"{s3.SDK_PREFIX}id_lists/index.json"
ID_LIST_PREFIX = f"{s3.SDK_PREFIX}id_lists/"
KEYS = {1: V1_KEY, 2: V2_KEY}


def snapshot() -> specs.Snapshot:
    """Every stored entity the SDKs evaluate (one query per kind)."""
    return specs.Snapshot(
        gates=dynamo.list_all(kinds.GATE),
        segments=dynamo.list_all(kinds.SEGMENT),
        configs=dynamo.list_all(kinds.DYNAMIC_CONFIG),
        experiments=dynamo.list_all(kinds.EXPERIMENT),
        layers=dynamo.list_all(kinds.LAYER),
        holdouts=dynamo.list_all(kinds.HOLDOUT),
    )


def _digest(doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "time"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _gz(doc: dict[str, Any]) -> bytes:
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)


def _id_lists(snap: specs.Snapshot, now_ms: int) -> dict[str, Any]:
    """Write the id-list file of every id-list segment whose version changed; the new index."""
    raw = s3.get_if_exists(ID_LISTS_INDEX)
    index: dict[str, Any] = json.loads(raw) if raw else {}
    out: dict[str, Any] = {}
    for seg in snap.segments:
        if seg.get("type") != "id_list" or is_archived(seg):
            continue
        known = index.get(seg["id"])
        if known and known.get("version") == seg["version"]:
            out[seg["id"]] = known
            continue
        list_key = (seg.get("_state") or {}).get("idListKey", "")
        ids = sorted(segment_ids.all_ids(seg["id"], list_key))
        body = "".join(f"+{id_list_hash(i)}\n" for i in ids).encode("ascii")
        file_id = hashlib.sha256(body).hexdigest()[:20]
        if known and known.get("fileID") == file_id:
            out[seg["id"]] = {**known, "version": seg["version"]}
            continue
        s3.put_document(f"{ID_LIST_PREFIX}{seg['id']}/{file_id}.txt", body, {}, "text/plain")
        out[seg["id"]] = {
            "fileID": file_id,
            "size": len(body),
            "creationTime": now_ms,
            "version": seg["version"],
        }
    if out != index:
        s3.put_document(ID_LISTS_INDEX, json.dumps(out, sort_keys=True).encode(), {}, "application/json")
    return out


@dataclass
class BuildResult:
    time: int
    changed: bool
    gates: int
    configs: int
    layers: int
    v1_bytes: int


def rebuild(now_ms: int | None = None) -> BuildResult:
    """Build the documents from the table and store them, unless nothing changed."""
    from expconsole.services.sdk.v2 import v1_to_v2

    now = int(time.time() * 1000) if now_ms is None else now_ms
    snap = snapshot()
    _id_lists(snap, now)
    stored = s3.get_document(V1_KEY)
    previous_time = int(stored[2].get("time", 0)) if stored else 0
    previous_digest = stored[2].get("digest") if stored else None
    doc = specs.build(snap, max(now, previous_time + 1))
    digest = _digest(doc)
    counts = (len(doc["feature_gates"]), len(doc["dynamic_configs"]), len(doc["layer_configs"]))
    if digest == previous_digest:
        return BuildResult(previous_time, False, *counts, 0)
    v1 = _gz(doc)
    v2 = _gz(v1_to_v2(doc))
    meta = {"time": str(doc["time"]), "digest": digest}
    # v2 first: a reader that sees the new v1 finds the v2 of the same build or a newer one.
    s3.put_document(V2_KEY, v2, meta, "application/json", "gzip")
    s3.put_document(V1_KEY, v1, meta, "application/json", "gzip")
    return BuildResult(doc["time"], True, *counts, len(v1))


# --- serving -------------------------------------------------------------------------------------


@dataclass
class Document:
    etag: str
    gz: bytes
    time: int


_CACHE: dict[str, Document] = {}


def current(version: int) -> Document | None:
    """The stored document of a version (from memory when S3 says it has not changed)."""
    key = KEYS[version]
    cached = _CACHE.get(key)
    found = s3.get_document(key, cached.etag if cached else None)
    if found is None:
        _CACHE.pop(key, None)
        return None
    etag, body, meta = found
    if body is None and cached is not None:
        return cached
    assert body is not None
    document = Document(etag=etag, gz=body, time=int(meta.get("time", 0)))
    _CACHE[key] = document
    return document


def current_spec() -> dict[str, Any] | None:
    """The v1 document, parsed (kept parsed per ETag: log_event and the evaluator read it)."""
    document = current(1)
    if document is None:
        return None
    parsed = _PARSED.get(document.etag)
    if parsed is None:
        parsed = json.loads(gzip.decompress(document.gz))
        _PARSED.clear()
        _PARSED[document.etag] = parsed
    return parsed


_PARSED: dict[str, dict[str, Any]] = {}


def id_lists() -> dict[str, Any]:
    raw = s3.get_if_exists(ID_LISTS_INDEX)
    return json.loads(raw) if raw else {}


def id_list_key(segment_id: str, file_id: str) -> str:
    return f"{ID_LIST_PREFIX}{segment_id}/{file_id}.txt"


def id_list_bytes(segment_id: str, file_id: str, start: int) -> tuple[bytes, int] | None:
    """An id-list file from byte `start` on, and its whole size; None when there is no such file."""
    if "/" in segment_id or "/" in file_id:
        return None
    return s3.get_range(id_list_key(segment_id, file_id), start)


def presigned_url(version: int) -> str:
    """A short-lived S3 URL of a document too large for a Lambda answer."""
    return s3.presigned_url(KEYS[version])
