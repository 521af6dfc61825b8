"""Metrics where there is no CloudWatch, and metrics that are never empty.

Locally (`expconsole serve`) metrics are off: the terminal must show log lines only, not the
embedded-metric documents Lambda ships to CloudWatch. In AWS, every invocation of the pulse
function writes at least one metric, so Powertools has something to flush (an empty flush warns).
"""

from __future__ import annotations

import json
import warnings

import pytest
from aws_lambda_powertools.metrics.provider import cold_start

from expconsole import observability
from tests.conftest import LAMBDA_CONTEXT, load_function


def _emf(out: str) -> list[dict[str, object]]:
    docs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [d for d in docs if "_aws" in d]


def test_with_metrics_off_a_cold_invocation_prints_no_metric_document(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    monkeypatch.setattr(cold_start, "is_cold_start", True)

    def handler(event: object, context: object) -> dict[str, int]:
        observability.count("Requests")  # as every API function does
        return {"statusCode": 200}

    capsys.readouterr()
    assert observability.instrument(handler, http=False)({}, LAMBDA_CONTEXT) == {"statusCode": 200}
    assert _emf(capsys.readouterr().out) == []


def test_with_metrics_on_the_cold_start_is_still_counted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    monkeypatch.setattr(cold_start, "is_cold_start", True)

    def handler(event: object, context: object) -> dict[str, int]:
        observability.count("Requests")
        return {"statusCode": 200}

    capsys.readouterr()
    observability.instrument(handler, http=False)({}, LAMBDA_CONTEXT)
    names = {
        m["Name"]
        for doc in _emf(capsys.readouterr().out)
        for d in doc["_aws"]["CloudWatchMetrics"]
        for m in d["Metrics"]
    }
    assert names == {"ColdStart", "Requests"}


def test_an_hour_with_nothing_due_counts_zero_scheduled_loads(
    aws: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    pulse = load_function("pulse")
    event = {
        "source": "aws.events",
        "detail-type": "Scheduled Event",
        "time": "2026-11-25T03:00:00Z",
        "detail": {},
    }
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Powertools warns when it has no metric to flush
        assert pulse.lambda_handler(event, LAMBDA_CONTEXT) == {"loaded": [], "failed": [], "compacting": []}
    values = [
        doc["PulseLoadsScheduled"] for doc in _emf(capsys.readouterr().out) if "PulseLoadsScheduled" in doc
    ]
    assert values == [[0.0]]
