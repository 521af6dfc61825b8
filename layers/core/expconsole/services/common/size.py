"""The one limit on a stored entity's size: bytes of its JSON as the store writes it.

A DynamoDB item holds 400 KB, keys and attribute names included; 350,000 bytes of JSON leaves
room for those. Over it is a 413 (the limit is on size, not on a rule of the input), counted
in bytes, whatever the kind.
"""

from __future__ import annotations

import json
from typing import Any

from expconsole.errors import TooLarge

MAX_STORED_BYTES = 350_000


def stored_bytes(doc: Any) -> int:
    """The size of `doc` as stored: compact JSON, UTF-8."""
    return len(json.dumps(doc, separators=(",", ":")).encode())


def check_stored_size(doc: Any, label: str, advice: str) -> None:
    """TooLarge, naming the size and the limit, when `doc` would not fit in one stored item.

    `label` names the entity ("experiment"); `advice` says what to shorten."""
    size = stored_bytes(doc)
    if size > MAX_STORED_BYTES:
        raise TooLarge(
            f"The {label} is too large: it would take {size} bytes stored; at most {MAX_STORED_BYTES} fit. "
            + advice
        )
