"""Security through the local server: its log never shows a key or a key's hash, whatever the
request's outcome, and its answers show no internals.

The server runs the real gates, ingest and SDK functions (a template of its own, with
Powertools logging at DEBUG, the most the template's LogLevel allows) plus one route built with
the product's `build()` whose handler raises, so an unhandled error and its logged traceback
are part of the run. Its stderr, the log, goes to a file.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from expconsole.models.events import MAX_BODY_BYTES as INGEST_MAX_BYTES
from expconsole_tools.local.gateway import MAX_BODY_BYTES as GATEWAY_MAX_BYTES
from expconsole_tools.local.process import ServeProcess

REPO = Path(__file__).resolve().parents[2]
GATES = "/console/v1/gates"
INGEST = "/v1/webhooks/event_webhook"
BOOM = "/console/v1/boom"
INTERNAL_DETAIL = "secret internal detail /path/file.py"
INTERNALS = ("Traceback", 'File "', "RuntimeError", "expconsole.", "botocore", INTERNAL_DETAIL)

BOOM_APP = f'''
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from expconsole.api.app import build

router = APIGatewayHttpRouter()


@router.get("{BOOM}")
def boom() -> dict:
    raise RuntimeError("{INTERNAL_DETAIL}")


app, lambda_handler = build(router)
'''

TEMPLATE = """
Globals:
  Function:
    Timeout: 29
    Environment:
      Variables:
        POWERTOOLS_SERVICE_NAME: expconsole
        POWERTOOLS_LOG_LEVEL: DEBUG
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
  GatesFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: {functions}/gates/
      Handler: app.lambda_handler
      Events:
        List: {{Type: HttpApi, Properties: {{ApiId: !Ref Api, Method: GET, Path: {gates}}}}}
        Create: {{Type: HttpApi, Properties: {{ApiId: !Ref Api, Method: POST, Path: {gates}}}}}
        Read: {{Type: HttpApi, Properties: {{ApiId: !Ref Api, Method: GET, Path: "{gates}/{{id}}"}}}}
  IngestFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: {functions}/ingest/
      Handler: app.lambda_handler
      Events:
        Ingest: {{Type: HttpApi, Properties: {{ApiId: !Ref Api, Method: POST, Path: {ingest}}}}}
  SdkFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: {functions}/sdk/
      Handler: app.lambda_handler
      Events:
        Specs:
          Type: HttpApi
          Properties:
            ApiId: !Ref Api
            Method: GET
            Path: "/v1/download_config_specs/{{file}}"
        Log:
          Type: HttpApi
          Properties: {{ApiId: !Ref Api, Method: POST, Path: /v1/log_event}}
  BoomFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: boom/
      Handler: app.lambda_handler
      Events:
        Boom: {{Type: HttpApi, Properties: {{ApiId: !Ref Api, Method: GET, Path: {boom}}}}}
"""


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Exchange:
    """A request's outcome: what the client got back."""

    what: str
    status: int
    body: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    folder = tmp_path_factory.mktemp("security")
    (folder / "boom").mkdir()
    (folder / "boom" / "app.py").write_text(BOOM_APP)
    (folder / "template.yaml").write_text(
        TEMPLATE.format(functions=REPO / "functions", gates=GATES, ingest=INGEST, boom=BOOM)
    )
    template = str(folder / "template.yaml")
    process = ServeProcess(
        "--ephemeral",
        "--port",
        "0",
        "--no-warm",
        "--template",
        template,
        cwd=folder,
        stderr=folder / "server.log",
    )
    with process:
        yield process


def log_of(server: ServeProcess, waiting_for: str) -> str:
    assert server.stderr_path is not None
    deadline = time.monotonic() + 10
    while waiting_for not in server.stderr_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)  # the access line is written once the answer has left
    return server.stderr_path.read_text()


def test_no_key_or_hash_in_the_server_log_or_answers_whatever_the_outcome(served: ServeProcess) -> None:
    console, server = served.api_key, served.server_secret
    unknown = "console-" + secrets.token_urlsafe(32)

    def send(
        what: str,
        method: str,
        path: str,
        key: str | None,
        data: str | bytes | None = None,
        ctype: str = "application/json",
        header: str = "SERVICE-API-KEY",
    ) -> Exchange:
        headers = {"Content-Type": ctype}
        if key is not None:
            headers[header] = f"Bearer {key}" if header == "Authorization" else key
        response = requests.request(method, served.url + path, headers=headers, data=data, timeout=60)
        return Exchange(what, response.status_code, response.text)

    now = int(time.time() * 1000)
    event = {"event": "purchase", "user": {"userID": "u1"}, "timestamp": now, "metadata": {}}
    exchanges = [
        (send("list", "GET", GATES, console), 200),
        (send("create", "POST", GATES, console, json.dumps({"name": "served gate"})), 201),
        (send("bad json", "POST", GATES, console, "{not json"), 400),
        (send("5 MiB name", "POST", GATES, console, json.dumps({"name": "n" * (5 << 20)})), 413),
        (send("text", "POST", GATES, console, "{}", ctype="text/plain"), 415),
        (send("no gate", "GET", f"{GATES}/nope", console), 404),
        (send("no route", "GET", "/console/v1/nothing", console), 404),
        (send("unknown key", "GET", GATES, unknown), 401),
        (send("no key", "GET", GATES, None), 401),
        (send("bearer", "GET", GATES, console, header="Authorization"), 401),
        (send("bearer, ingest", "POST", INGEST, server, json.dumps([event]), header="Authorization"), 401),
        (send("server secret", "GET", GATES, server), 403),
        (send("ingest", "POST", INGEST, server, json.dumps([event])), 202),
        (send("ingest with console key", "POST", INGEST, console, json.dumps([event])), 403),
        (send("ingest over 1 MiB", "POST", INGEST, server, b" " * (INGEST_MAX_BYTES + 1)), 413),
        (send("over 10 MiB", "POST", GATES, console, b" " * (GATEWAY_MAX_BYTES + 1)), 413),
        (send("boom", "GET", BOOM, console), 500),
        # the SDK protocol carries the server secret in its path; no spec document is built here
        (send("specs", "GET", f"/v1/download_config_specs/{server}.json", server), 503),
        (send("specs, console key", "GET", f"/v1/download_config_specs/{console}.json", console), 403),
        (send("sdk events", "POST", "/v1/log_event", server, json.dumps({"events": []})), 202),
        (
            send("sdk header", "POST", "/v1/log_event", server, '{"events": []}', header="STATSIG-API-KEY"),
            202,
        ),
        (send("specs, no key", "GET", f"/v1/download_config_specs/{server}.json", None), 401),
    ]
    for exchange, expected in exchanges:
        assert exchange.status == expected, (exchange.what, exchange.status, exchange.body[:300])
        for key in (console, server, unknown):
            assert key not in exchange.body and sha256(key) not in exchange.body, exchange.what
        if exchange.status >= 400:
            body = json.loads(exchange.body)
            assert set(body) <= {"status", "message", "errors"}, (exchange.what, body)
            assert not [s for s in INTERNALS if s in exchange.body], (exchange.what, body)
        if exchange.status == 401:  # the function's answer naming the header, never API Gateway's bare one
            assert "SERVICE-API-KEY" in json.loads(exchange.body)["message"], exchange.what
        if exchange.what.startswith("bearer"):
            assert "not Authorization" in json.loads(exchange.body)["message"], exchange.body

    log = log_of(served, waiting_for=f"GET {BOOM} 500")
    # The log holds the access lines and the unhandled error with its traceback...
    for exchange, _ in exchanges:
        assert f" {exchange.status} " in log
    assert "Unhandled error" in log and INTERNAL_DETAIL in log and "Traceback" in log
    # ...and no key (the sandboxes mask the one a request presents) nor any key's hash (which
    # nothing masks: tests/functional/test_security.py checks the product's own logging unmasked).
    for name, key in (("console key", console), ("server secret", server), ("unknown key", unknown)):
        assert key not in log, f"the {name} is in the server's log"
        assert sha256(key) not in log, f"the {name}'s hash is in the server's log"
