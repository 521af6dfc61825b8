"""What an operator of the stack reads: the functions' metrics (what the alarms watch) and logs.

Handlers run on moto and print what Lambda would ship to CloudWatch: Powertools' JSON log lines
and one embedded-metric-format (EMF) document per invocation. The alarms in template.yaml watch
those metric names, in the namespace and dimension the functions write them with.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from expconsole import observability
from expconsole.services import keys
from expconsole.store import s3
from tests.conftest import LAMBDA_CONTEXT, Caller, http_event, load_function

REPO = Path(__file__).resolve().parents[2]
INGEST = "/v1/webhooks/event_webhook"


def _printed(out: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(EMF documents, log lines) among what the handler printed."""
    docs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [d for d in docs if "_aws" in d], [d for d in docs if "_aws" not in d]


def _metrics(emf: list[dict[str, Any]]) -> dict[str, float]:
    """Metric name -> value, over the invocations' EMF documents (one per invocation). ColdStart
    (Powertools' own, on a process's first invocation) depends on the tests run before."""
    out: dict[str, float] = {}
    for doc in emf:
        for directive in doc["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                if metric["Name"] == "ColdStart":
                    continue
                value = doc[metric["Name"]]
                out[metric["Name"]] = out.get(metric["Name"], 0) + (
                    sum(value) if isinstance(value, list) else value
                )
    return out


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_multi_constructor(
    "!",
    lambda loader, suffix, node: {
        suffix: loader.construct_sequence(node)
        if isinstance(node, yaml.SequenceNode)
        else loader.construct_scalar(node)
        if isinstance(node, yaml.ScalarNode)
        else loader.construct_mapping(node)
    },
)


def _template() -> dict[str, Any]:
    return yaml.load((REPO / "template.yaml").read_text(), Loader=_Loader)


def _watched(alarm: str) -> set[tuple[str, str, tuple[tuple[str, str], ...]]]:
    """(namespace, metric, dimensions) of the stack's own metrics an alarm reads."""
    props = _template()["Resources"][alarm]["Properties"]
    out = set()
    for query in props["Metrics"]:
        metric = (query.get("MetricStat") or {}).get("Metric")
        if metric and isinstance(metric["Namespace"], dict):  # !Sub "ExpConsole/${AWS::StackName}"
            dims = tuple(sorted((d["Name"], d["Value"]) for d in metric["Dimensions"]))
            out.add((metric["Namespace"]["Sub"], metric["MetricName"], dims))
    return out


def _written(emf: list[dict[str, Any]]) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """(metric, dimensions) as the EMF documents declare them."""
    out = set()
    for doc in emf:
        for directive in doc["_aws"]["CloudWatchMetrics"]:
            for dims in directive["Dimensions"]:
                for metric in directive["Metrics"]:
                    out.add((metric["Name"], tuple(sorted((d, doc[d]) for d in dims))))
    return out


def test_the_functions_write_metrics_in_the_namespace_the_template_gives_them() -> None:
    namespace = _template()["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    assert namespace == {"Sub": "ExpConsole/${AWS::StackName}"}
    env = {**os.environ, "POWERTOOLS_METRICS_NAMESPACE": "ExpConsole/my-stack"}
    code = "from expconsole import observability; print(observability.metrics.namespace)"
    shown = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "ExpConsole/my-stack"


def test_an_ingestion_storage_failure_is_counted_where_the_ingestion_alarm_looks(
    aws: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    s3.create_bucket()
    ingest = Caller("ingest")
    now = int(time.time() * 1000)
    batch = [{"event": "buy", "user": {"userID": "u1"}, "timestamp": now}]

    def down(key: str, body: bytes) -> None:
        raise RuntimeError("S3 is down")

    real_put = s3.put
    monkeypatch.setattr(s3, "put", down)
    capsys.readouterr()
    status, _ = ingest("POST", INGEST, batch, key_kind="server")
    assert status == 503
    emf, _ = _printed(capsys.readouterr().out)
    assert _metrics(emf) == {"IngestFailures": 1, "Requests": 1, "ServerErrors": 1}
    watched = {(metric, dims) for _, metric, dims in _watched("IngestionErrorsAlarm")}
    assert ("IngestFailures", (("service", "expconsole"),)) in watched & _written(emf)

    monkeypatch.setattr(s3, "put", real_put)
    status, _ = ingest("POST", INGEST, batch, key_kind="server")
    status_again, _ = ingest("POST", INGEST, batch, key_kind="server")
    assert (status, status_again) == (202, 202)
    emf, _ = _printed(capsys.readouterr().out)
    assert _metrics(emf) == {"EventsAccepted": 1, "EventsDuplicate": 1, "Requests": 2}


def test_client_errors_are_counted_apart_from_server_errors(
    aws: None, capsys: pytest.CaptureFixture[str]
) -> None:
    gates = Caller("gates")
    capsys.readouterr()
    assert gates("GET", "/console/v1/gates/nope")[0] == 404
    assert gates("GET", "/console/v1/gates")[0] == 200
    emf, _ = _printed(capsys.readouterr().out)
    assert _metrics(emf) == {"Requests": 2, "ClientErrors": 1}


def test_log_lines_carry_the_request_id_and_never_the_key(
    aws: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    s3.create_bucket()
    key, _ = keys.create_key("server", key="secret-0123456789abcdefghijklmnopqrstuv")
    event = http_event(
        "POST",
        INGEST,
        [{"event": "buy", "user": {"userID": "u1"}, "timestamp": int(time.time() * 1000)}],
        key_kind="server",
        headers={"service-api-key": key},
    )
    event["requestContext"]["requestId"] = "Zx9abcDEFgh="

    def down(key: str, body: bytes) -> None:
        raise RuntimeError("S3 is down")

    monkeypatch.setattr(s3, "put", down)
    # What Lambda ships: the logger's own JSON lines (its handler writes to the stdout it found at
    # import, so a handler with its formatter is added here to read them).
    lines = io.StringIO()
    shipped = logging.StreamHandler(lines)
    shipped.setFormatter(observability.logger.registered_formatter)
    observability.logger.addHandler(shipped)
    try:
        capsys.readouterr()
        response = load_function("ingest").lambda_handler(event, LAMBDA_CONTEXT)
    finally:
        observability.logger.removeHandler(shipped)
    assert response["statusCode"] == 503
    out = lines.getvalue() + capsys.readouterr().out
    assert key not in out
    _, logs = _printed(out)
    warning = next(line for line in logs if line["message"] == "Event storage failed")
    assert warning["level"] == "WARNING" and "S3 is down" in warning["exception"]
    assert warning["correlation_id"] == "Zx9abcDEFgh="
    assert warning["function_request_id"] == LAMBDA_CONTEXT.aws_request_id


def test_a_failed_pulse_load_is_counted_where_the_pulse_alarm_looks(
    aws: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from botocore.exceptions import ClientError

    s3.create_bucket()
    experiments, pulse, ingest = Caller("experiments"), Caller("pulse"), Caller("ingest")
    body = {"name": "observed", "groups": [{"name": "A", "size": 50}, {"name": "B", "size": 50}]}
    status, created = experiments("POST", "/console/v1/experiments", body)
    assert status == 201, created
    exp = created["data"]
    assert experiments("PUT", f"/console/v1/experiments/{exp['id']}/start")[0] == 200
    now = int(time.time() * 1000)
    exposure = {
        "event": "console::experiment_exposure",
        "user": {"userID": "u1"},
        "timestamp": now,
        "metadata": {"experiment": exp["id"], "group": exp["groups"][0]["id"]},
    }
    assert ingest("POST", INGEST, [exposure], key_kind="server")[0] == 202

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ClientError({"Error": {"Code": "InternalError", "Message": "S3 is down"}}, "PutObject")

    real_put_object = s3.put_object
    monkeypatch.setattr(s3, "put_object", broken)
    capsys.readouterr()
    status, _ = pulse("POST", f"/console/v1/experiments/{exp['id']}/load_pulse", {})
    assert status == 503
    emf, _ = _printed(capsys.readouterr().out)
    assert _metrics(emf) == {"PulseRunsFailed": 1, "Requests": 1, "ServerErrors": 1}
    watched = {(metric, dims) for _, metric, dims in _watched("PulseRunsFailedAlarm")}
    assert ("PulseRunsFailed", (("service", "expconsole"),)) in watched & _written(emf)

    monkeypatch.setattr(s3, "put_object", real_put_object)
    status, _ = pulse("POST", f"/console/v1/experiments/{exp['id']}/load_pulse", {})
    assert status == 200
    metrics = _metrics(_printed(capsys.readouterr().out)[0])
    assert metrics["PulseRunDuration"] > 0 and "PulseRunsFailed" not in metrics
