"""The one stored-size limit (services.common.size): bytes of compact JSON, a 413 over it."""

from __future__ import annotations

import json

import pytest

from expconsole.api.errors import status_of
from expconsole.errors import TooLarge
from expconsole.services.common import size


def test_the_size_is_the_utf8_bytes_of_compact_json() -> None:
    doc = {"a": [1, 2], "name": "é😀"}
    expected = json.dumps(doc, separators=(",", ":")).encode("utf-8")
    assert size.stored_bytes(doc) == len(expected)
    # json escapes non-ASCII: each astral character is 12 bytes stored, not 1 character.
    assert size.stored_bytes({"s": "😀"}) - size.stored_bytes({"s": ""}) == 12


def _doc_of(total: int) -> dict[str, str]:
    empty = size.stored_bytes({"v": ""})
    return {"v": "x" * (total - empty)}


def test_at_the_limit_it_fits_and_one_byte_over_it_is_a_413_naming_both_sizes() -> None:
    at_limit = _doc_of(size.MAX_STORED_BYTES)
    assert size.stored_bytes(at_limit) == size.MAX_STORED_BYTES
    size.check_stored_size(at_limit, "gate", "Shorten it.")
    with pytest.raises(TooLarge) as info:
        size.check_stored_size(_doc_of(size.MAX_STORED_BYTES + 1), "segment", "Use fewer rules.")
    assert status_of(info.value) == 413
    message = info.value.message
    assert message.startswith("The segment is too large")
    assert f"take {size.MAX_STORED_BYTES + 1} bytes" in message
    assert f"at most {size.MAX_STORED_BYTES} fit" in message and message.endswith("Use fewer rules.")
