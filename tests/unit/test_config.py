"""Durations read from the environment: a value that is not a number says so in the log."""

from __future__ import annotations

import logging

import pytest

from expconsole import config
from expconsole.services import metrics


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(None, 90.0), ("", 90.0), ("  ", 90.0), ("0", 0.0), ("2.5", 2.5), ("-3", 0.0)],
)
def test_seconds_reads_a_number_else_the_default(
    raw: str | None, expected: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    if raw is None:
        monkeypatch.delenv("SOME_SECONDS", raising=False)
    else:
        monkeypatch.setenv("SOME_SECONDS", raw)
    assert config.seconds("SOME_SECONDS", 90.0) == expected


def test_a_value_that_is_not_a_number_gives_the_default_and_a_warning_naming_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(metrics.GRACE_ENV, "1 day")
    with caplog.at_level(logging.WARNING, logger="expconsole.config"):
        assert metrics.archive_grace_ms() == metrics.DEFAULT_GRACE_SECONDS * 1000
    (record,) = [r for r in caplog.records if r.name == "expconsole.config"]
    assert metrics.GRACE_ENV in record.getMessage() and "'1 day'" in record.getMessage()
    monkeypatch.setenv("KEY_CACHE_SECONDS", "soon")
    with caplog.at_level(logging.WARNING, logger="expconsole.config"):
        assert config.key_cache_seconds() == config.DEFAULT_KEY_CACHE_SECONDS
    assert any("KEY_CACHE_SECONDS='soon'" in r.getMessage() for r in caplog.records)
