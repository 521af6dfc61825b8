"""The Statsig SDKs' two hashes, in one place for the writer of id lists and the evaluator.

Both must be the SDK's to the bit: `unit_hash` decides buckets and pass percentages, `id_list_hash`
is how an id is written in an id-list file (`documents`) and looked up in it (`evaluator`, and the
SDKs reading the same file). tests/unit/test_sdk_evaluator.py checks both against the `statsig` SDK.
"""

from __future__ import annotations

import base64
import hashlib


def unit_hash(key: str) -> int:
    """First 8 bytes of SHA-256 as a big-endian unsigned integer: the SDK's bucketing hash."""
    return int.from_bytes(hashlib.sha256(str(key).encode("utf-8")).digest()[:8], "big")


def id_list_hash(unit_id: object) -> str:
    """How an id is stored in an id list (`+<hash>` lines): base64(sha256(str(id)))[:8], as the SDK
    hashes the value it looks up (a number is looked up by its text)."""
    return base64.b64encode(hashlib.sha256(str(unit_id).encode("utf-8")).digest()).decode("ascii")[:8]
