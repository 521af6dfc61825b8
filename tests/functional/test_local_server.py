"""The local server (`expconsole serve`) and `expconsole keys`, as a user relies on them.

Servers run as child processes (`ServeProcess`), each with its own moto: the functional tests
beside these use moto's in-process mocks, which reset moto's global state. A test template
with an echo function shows the event each request becomes, through real HTTP; another, with
a function that reports its process and can wait for its peers, shows the sandboxes: concurrent
invocations run at once in separate worker processes, as on Lambda.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
import requests

from expconsole_tools.local.backend import Journal
from expconsole_tools.local.gateway import MAX_BODY_BYTES, HttpRequest, RouteTable, build_event
from expconsole_tools.local.process import ServeProcess
from expconsole_tools.local.template import Function, Route, TemplateError, find_template, load_api

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = str(REPO / "template.yaml")
EXPCONSOLE = Path(sys.executable).with_name("expconsole")
GATES = "/console/v1/gates"

ECHO_APP = """
import json
import sys


def lambda_handler(event, context):
    if event["rawPath"].endswith("/boom"):
        key = event["headers"].get("service-api-key")
        bearer = event["headers"].get("authorization", "").removeprefix("Bearer ")
        print(f"printed on stdout: {key}")
        print(f"printed on stderr: {key}", file=sys.stderr)
        print(f"the bearer token: {bearer}", file=sys.stderr)
        raise RuntimeError(f"boom with {key}")
    return {"statusCode": 200, "body": json.dumps(event), "cookies": ["a=1; Path=/", "b=2; Path=/"]}
"""

ECHO_TEMPLATE = """
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
  EchoFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: echo/
      Handler: app.lambda_handler
      Events:
        One: {Type: HttpApi, Properties: {ApiId: !Ref Api, Method: GET, Path: "/echo/{id}"}}
        Item:
          Type: HttpApi
          Properties: {ApiId: !Ref Api, Method: POST, Path: "/echo/{id}/items/{item}"}
        Rest: {Type: HttpApi, Properties: {ApiId: !Ref Api, Method: ANY, Path: "/echo/{proxy+}"}}
"""


# Reports the sandbox it ran in. `meet=<folder>&n=N`: wait (up to `wait` s) until N invocations
# have come to the folder, each leaving its pid there: they can only all meet if they run at once.
SANDBOX_APP = """
import json
import os
import time
from pathlib import Path

COLD = True


def lambda_handler(event, context):
    global COLD
    cold, COLD = COLD, False
    action = (event.get("pathParameters") or {}).get("action")
    if action == "crash":
        os._exit(3)
    if action == "hang":
        time.sleep(60)
    if action == "raise":
        raise ValueError("raised on purpose")
    query = event.get("queryStringParameters") or {}
    peers = []
    if "meet" in query:
        folder = Path(query["meet"])
        (folder / str(os.getpid())).touch()
        deadline = time.monotonic() + float(query.get("wait", 20))
        while len(list(folder.iterdir())) < int(query["n"]) and time.monotonic() < deadline:
            time.sleep(0.01)
        peers = sorted(int(p.name) for p in folder.iterdir())
    time.sleep(float(query.get("sleep", 0)))
    body = {
        "pid": os.getpid(),
        "cold": cold,
        "peers": peers,
        "remainingMs": context.get_remaining_time_in_millis(),
        "table": os.environ.get("TABLE_NAME"),
        "endpoint": os.environ.get("AWS_ENDPOINT_URL"),
    }
    return {"statusCode": 200, "body": json.dumps(body)}
"""

SANDBOX_TEMPLATE = """
Globals:
  Function:
    Timeout: 1
Resources:
  Api:
    Type: AWS::Serverless::HttpApi
  WorkFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: work/
      Handler: app.lambda_handler
      Timeout: 20
      Events:
        Work: {Type: HttpApi, Properties: {ApiId: !Ref Api, Method: GET, Path: /work}}
  FragileFunction:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: work/
      Handler: app.lambda_handler
      Events:
        Fragile: {Type: HttpApi, Properties: {ApiId: !Ref Api, Method: GET, Path: "/fragile/{action}"}}
"""


def serve(*args: str, cwd: Path = REPO, stderr: Path | None = None) -> ServeProcess:
    """`expconsole serve --port 0 <args>`, not yet started."""
    return ServeProcess("--port", "0", *args, cwd=cwd, stderr=stderr)


def expconsole(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(EXPCONSOLE), *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def get(server: ServeProcess, path: str, key: str | None = None, **kwargs: Any) -> requests.Response:
    headers = {"SERVICE-API-KEY": key} if key else {}
    return requests.get(server.url + path, headers=headers, timeout=30, **kwargs)


def dynamodb(endpoint: str) -> Any:
    return boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


def key_of(item: dict[str, Any]) -> dict[str, Any]:
    return {"PK": item["PK"], "SK": item["SK"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """The real template, ephemeral."""
    with serve("--ephemeral", stderr=tmp_path_factory.mktemp("served") / "server.log") as process:
        yield process


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """A template whose function answers with the event it received."""
    folder = tmp_path_factory.mktemp("echo")
    (folder / "echo").mkdir()
    (folder / "echo" / "app.py").write_text(ECHO_APP)
    (folder / "template.yaml").write_text(ECHO_TEMPLATE)
    template = str(folder / "template.yaml")
    with serve("--ephemeral", "--template", template, cwd=folder, stderr=folder / "server.log") as process:
        yield process


def sandbox_server(folder: Path, *args: str) -> ServeProcess:
    """A server of SANDBOX_TEMPLATE in `folder`, not yet started."""
    (folder / "work").mkdir()
    (folder / "work" / "app.py").write_text(SANDBOX_APP)
    (folder / "template.yaml").write_text(SANDBOX_TEMPLATE)
    template = str(folder / "template.yaml")
    return serve("--ephemeral", "--template", template, *args, cwd=folder, stderr=folder / "server.log")


@pytest.fixture(scope="module")
def sandboxed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """SANDBOX_TEMPLATE's functions, three sandboxes at most each."""
    with sandbox_server(tmp_path_factory.mktemp("sandboxed"), "--max-concurrency", "3") as process:
        yield process


def meet(server: ServeProcess, folder: Path, n: int, wait: float = 20) -> list[dict[str, Any]]:
    """`n` concurrent invocations of WorkFunction that wait for each other in `folder`."""
    folder.mkdir()
    params = {"meet": str(folder), "n": str(n), "wait": str(wait)}

    def call(_: int) -> dict[str, Any]:
        response = requests.get(server.url + "/work", params=params, timeout=60)
        assert response.status_code == 200, response.text
        return dict(response.json())

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(call, range(n)))


def alive(pid: int) -> bool:
    """Whether the process exists (a zombie, not yet reaped by its parent, counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def log_of(server: ServeProcess, *, waiting_for: str = "") -> str:
    assert server.stderr_path is not None
    deadline = time.monotonic() + 5
    while waiting_for not in server.stderr_path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)  # the access line is written once the answer has left
    return server.stderr_path.read_text()


# --- the event a request becomes ------------------------------------------------------------


def test_a_request_becomes_the_payload_2_0_event_api_gateway_sends() -> None:
    api = load_api(find_template(start=REPO))
    match = RouteTable(api.routes).match("PATCH", "/console/v1/gates/my%20gate/rules/r1")
    assert match is not None
    route, params = match
    assert route.route_key == "PATCH /console/v1/gates/{id}/rules/{ruleID}"
    request = HttpRequest(
        method="PATCH",
        target="/console/v1/gates/my%20gate/rules/r1?tag=a&tag=b&q=x%20y&empty=",
        headers=[
            ("Host", "127.0.0.1:3000"),
            ("X-Multi", "1"),
            ("x-multi", "2"),
            ("Cookie", "a=1; b=2"),
            ("User-Agent", "test"),
        ],
        body=b"\xff\x00binary",
        source_ip="10.0.0.1",
    )
    event = build_event(request, route, params, request_id="rid", now=1700000000.5)
    assert event["version"] == "2.0"
    assert event["routeKey"] == "PATCH /console/v1/gates/{id}/rules/{ruleID}"
    assert event["rawPath"] == "/console/v1/gates/my%20gate/rules/r1"
    assert event["rawQueryString"] == "tag=a&tag=b&q=x%20y&empty="
    assert event["queryStringParameters"] == {"tag": "a,b", "q": "x y", "empty": ""}
    assert event["pathParameters"] == {"id": "my gate", "ruleID": "r1"}
    assert event["cookies"] == ["a=1", "b=2"]
    assert event["headers"]["x-multi"] == "1,2" and "cookie" not in event["headers"]
    assert event["headers"]["x-forwarded-for"] == "10.0.0.1"
    assert event["headers"]["x-forwarded-proto"] == "http"
    assert event["isBase64Encoded"] is True and base64.b64decode(event["body"]) == b"\xff\x00binary"
    context = event["requestContext"]
    assert context["http"] == {
        "method": "PATCH",
        "path": "/console/v1/gates/my%20gate/rules/r1",
        "protocol": "HTTP/1.1",
        "sourceIp": "10.0.0.1",
        "userAgent": "test",
    }
    assert context["domainName"] == "127.0.0.1:3000" and context["stage"] == "$default"
    assert context["requestId"] == "rid" and context["routeKey"] == event["routeKey"]
    assert context["timeEpoch"] == 1700000000500 and context["time"] == "14/Nov/2023:22:13:20 +0000"


def test_a_request_without_query_or_body_leaves_those_fields_out() -> None:
    function = Function("Fn", Path("app.py"), "lambda_handler")
    route = Route("GET", "/things", function)
    event = build_event(HttpRequest("GET", "/things", [("Host", "h")]), route, {}, request_id="r", now=0)
    assert event["rawQueryString"] == "" and event["isBase64Encoded"] is False
    for absent in ("queryStringParameters", "pathParameters", "body", "cookies"):
        assert absent not in event


def test_route_selection_prefers_exact_then_parameter_then_greedy() -> None:
    function = Function("Fn", Path("app.py"), "lambda_handler")
    table = RouteTable(
        [
            Route("ANY", "/a/{proxy+}", function),
            Route("GET", "/a/{id}", function),
            Route("GET", "/a/b", function),
            Route("ANY", "/a/{id}/c", function),
        ]
    )

    def chosen(method: str, path: str) -> tuple[str, dict[str, str]] | None:
        match = table.match(method, path)
        return None if match is None else (match[0].route_key, match[1])

    assert chosen("GET", "/a/b") == ("GET /a/b", {})
    assert chosen("GET", "/a/x") == ("GET /a/{id}", {"id": "x"})
    assert chosen("POST", "/a/x") == ("ANY /a/{proxy+}", {"proxy": "x"})
    assert chosen("GET", "/a/x/c") == ("ANY /a/{id}/c", {"id": "x"})
    assert chosen("GET", "/a/x/y/z") == ("ANY /a/{proxy+}", {"proxy": "x/y/z"})
    assert chosen("GET", "/a") is None and chosen("GET", "/a/") is None and chosen("GET", "/b") is None


def test_journal_replay_drops_only_a_torn_last_entry(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    entry = {"service": "dynamodb", "region": "us-east-1", "method": "POST", "uri": "/", "headers": {}}
    lines = [json.dumps({**entry, "body": base64.b64encode(str(i).encode()).decode()}) for i in range(3)]
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:20])
    bodies: list[bytes] = []

    def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        bodies.append(environ["wsgi.input"].read())
        start_response("200 OK", [])
        return [b"{}"]

    assert Journal(path).replay(app) == 2
    assert bodies == [b"0", b"1"]
    assert path.read_text() == "\n".join(lines[:2]) + "\n"


# --- the server, over HTTP --------------------------------------------------------------------


def test_banner_prints_the_urls_and_both_keys(server: ServeProcess) -> None:
    banner = "\n".join(server.banner)
    assert f"Console API:  {server.url}/console/v1" in banner
    assert f"Ingestion:    {server.url}/v1/webhooks/event_webhook" in banner
    assert server.api_key.startswith("console-") and server.server_secret.startswith("secret-")
    assert "ephemeral: yes" in banner
    shell = f"Shell: export CONSOLE={server.url} KEY={server.api_key} SECRET={server.server_secret}"
    assert shell in server.banner
    assert banner.endswith(f"Try: curl -H 'SERVICE-API-KEY: {server.api_key}' {server.url}{GATES}")


def test_unknown_route_is_404_and_unrouted_method_405_from_the_default_route(server: ServeProcess) -> None:
    """Requests no route matches go to the `$default` route (the docs function), as in AWS."""
    for path in ("/nope", "/console/v1/gatesx"):
        response = requests.get(server.url + path, headers={"SERVICE-API-KEY": server.api_key}, timeout=30)
        body = response.json()
        assert (response.status_code, body["status"]) == (404, 404), (path, body)
        assert f"No route for GET {path}." in body["message"]
    # Methods http.server has no handler for are the gateway's to answer too (not a bare 501).
    for method in ("DELETE", "TRACE", "QUERY", "PUT"):
        response = requests.request(
            method, server.url + GATES, headers={"SERVICE-API-KEY": server.api_key}, timeout=30
        )
        body = response.json()
        assert (response.status_code, body["status"]) == (405, 405), (method, body)
        assert response.headers["Allow"] == "GET, POST" and "use one of GET, POST" in body["message"]


def test_missing_key_is_a_401_naming_the_header(server: ServeProcess) -> None:
    """The function answers it (no authorizer answers first with a bare `{"message"}`)."""
    response = get(server, GATES)
    assert response.status_code == 401
    assert response.json() == {
        "status": 401,
        "message": "Missing API key: send it in the SERVICE-API-KEY header (a console API key).",
        "errors": [{"field": "SERVICE-API-KEY", "message": "is required"}],
    }
    assert response.headers["Content-Type"] == "application/json" and response.headers["Apigw-Requestid"]


def test_a_key_sent_as_a_bearer_token_is_a_401_saying_where_it_goes(server: ServeProcess) -> None:
    for path in (GATES, "/v1/webhooks/event_webhook", "/v1/download_config_specs/x.json"):
        response = requests.request(
            "POST" if "webhook" in path else "GET",
            server.url + path,
            headers={"Authorization": f"Bearer {server.api_key}"},
            timeout=30,
        )
        body = response.json()
        assert (response.status_code, body["status"]) == (401, 401), (path, body)
        assert "goes in the SERVICE-API-KEY header, not Authorization" in body["message"], body
        assert server.api_key not in response.text


def test_unknown_key_is_401_with_the_error_body(server: ServeProcess) -> None:
    response = get(server, GATES, key="console-not-a-key")
    assert response.status_code == 401
    body = response.json()
    assert body["status"] == 401 and "SERVICE-API-KEY" in body["message"]


def test_server_secret_on_a_console_route_is_403(server: ServeProcess) -> None:
    response = get(server, GATES, key=server.server_secret)
    assert response.status_code == 403 and response.json()["status"] == 403


def test_header_names_are_case_insensitive(server: ServeProcess) -> None:
    for name in ("service-api-key", "Service-Api-Key"):
        response = requests.get(server.url + GATES, headers={name: server.api_key}, timeout=30)
        assert response.status_code == 200, response.text


def test_body_over_10_mib_is_413(server: ServeProcess) -> None:
    headers = {"SERVICE-API-KEY": server.api_key, "Content-Type": "application/json"}
    response = requests.post(
        server.url + GATES, data=b" " * (MAX_BODY_BYTES + 1), headers=headers, timeout=60
    )
    assert (response.status_code, response.json()) == (413, {"message": "Request Entity Too Large"})


def test_a_json_body_that_is_not_utf_8_is_400_naming_the_body(server: ServeProcess) -> None:
    headers = {"SERVICE-API-KEY": server.api_key, "Content-Type": "application/json"}
    response = requests.post(server.url + GATES, data=b'{"name": "\xff\xfe"}', headers=headers, timeout=30)
    assert response.status_code == 400, response.text
    assert [e["field"] for e in response.json()["errors"]] == ["body"]


def test_body_over_10_mib_is_refused_before_it_is_sent(server: ServeProcess) -> None:
    address = urlsplit(server.url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
    connection.putrequest("POST", GATES)
    connection.putheader("Content-Length", str(MAX_BODY_BYTES + 1))
    connection.putheader("Expect", "100-continue")
    connection.endheaders()
    response = connection.getresponse()
    assert response.status == 413 and json.loads(response.read()) == {"message": "Request Entity Too Large"}
    connection.close()


def test_query_and_path_parameters_reach_the_function(echo: ServeProcess) -> None:
    response = get(echo, "/echo/a%20b?x=1&x=2&y=", key=echo.api_key, cookies={"c": "3"})
    assert response.status_code == 200
    event = response.json()
    assert event["routeKey"] == "GET /echo/{id}" and event["pathParameters"] == {"id": "a b"}
    assert event["rawQueryString"] == "x=1&x=2&y=" and event["queryStringParameters"] == {"x": "1,2", "y": ""}
    assert event["cookies"] == ["c=3"] and event["headers"]["service-api-key"] == echo.api_key
    assert response.cookies.get("a") == "1" and response.cookies.get("b") == "2"

    event = requests.post(
        echo.url + "/echo/x/items/y%2Fz", headers={"SERVICE-API-KEY": echo.api_key}, data=b"\xff", timeout=30
    ).json()
    assert event["routeKey"] == "POST /echo/{id}/items/{item}"
    assert event["pathParameters"] == {"id": "x", "item": "y/z"}
    assert event["isBase64Encoded"] is True and event["body"] == base64.b64encode(b"\xff").decode()

    event = requests.delete(
        echo.url + "/echo/a/b/c", headers={"SERVICE-API-KEY": echo.api_key}, timeout=30
    ).json()
    assert event["routeKey"] == "ANY /echo/{proxy+}" and event["pathParameters"] == {"proxy": "a/b/c"}


def test_the_gateway_checks_no_key_the_function_gets_the_request_as_sent(echo: ServeProcess) -> None:
    response = get(echo, "/echo/x")
    assert response.status_code == 200 and "authorizer" not in response.json()["requestContext"]


def test_a_template_with_an_authorizer_is_refused_not_served_without_it(tmp_path: Path) -> None:
    """API Gateway would answer some requests itself; serving the functions alone would not."""
    (tmp_path / "echo").mkdir()
    (tmp_path / "echo" / "app.py").write_text(ECHO_APP)
    with_authorizer = ECHO_TEMPLATE.replace(
        "    Type: AWS::Serverless::HttpApi\n",
        "    Type: AWS::Serverless::HttpApi\n    Properties: {Auth: {DefaultAuthorizer: Keys}}\n",
    )
    (tmp_path / "template.yaml").write_text(with_authorizer)
    with pytest.raises(TemplateError, match="Api declares Auth: the local server runs no authorizer"):
        load_api(tmp_path / "template.yaml")
    on_a_route = ECHO_TEMPLATE.replace('Path: "/echo/{id}"}', 'Path: "/echo/{id}", Auth: {Authorizer: NONE}}')
    (tmp_path / "template.yaml").write_text(on_a_route)
    with pytest.raises(TemplateError, match=r"EchoFunction\.One declares Auth"):
        load_api(tmp_path / "template.yaml")


def test_a_failing_function_is_500_and_its_log_never_shows_the_key(echo: ServeProcess) -> None:
    bearer = "console-sent-as-a-bearer-token-0123456789"
    headers = {"SERVICE-API-KEY": echo.api_key, "Authorization": f"Bearer {bearer}"}
    response = requests.get(echo.url + "/echo/boom", headers=headers, timeout=30)
    assert (response.status_code, response.json()) == (500, {"message": "Internal Server Error"})
    log = log_of(echo, waiting_for="GET /echo/boom 500")
    assert "RuntimeError: boom with ***" in log and "GET /echo/boom 500" in log
    # What the handler prints, on stdout or stderr, is in the server's log (stderr), key masked.
    assert "printed on stdout: ***" in log and "printed on stderr: ***" in log
    assert "the bearer token: ***" in log  # a key sent in Authorization is masked too
    assert echo.api_key not in log and bearer not in log
    assert get(echo, "/echo/ok", key=echo.api_key).status_code == 200


# --- sandboxes: each function's invocations run as on Lambda -------------------------------------


def test_concurrent_invocations_run_at_once_in_separate_sandboxes(
    sandboxed: ServeProcess, tmp_path: Path
) -> None:
    results = meet(sandboxed, tmp_path / "meeting", 3)
    pids = {r["pid"] for r in results}
    assert len(pids) == 3, results  # three processes...
    assert all(set(r["peers"]) == pids for r in results), results  # ...each running while the others were
    assert sandboxed._process is not None and sandboxed._process.pid not in pids
    # The function's own Timeout (20 s, not the Globals' 1 s) and the server's environment.
    assert all(10_000 < r["remainingMs"] <= 20_000 for r in results), results
    assert {(r["table"], r["endpoint"]) for r in results} == {("expconsole", sandboxed.backend_endpoint)}

    # Idle sandboxes are reused, warm: one request at a time needs a single one.
    warm = [requests.get(sandboxed.url + "/work", timeout=30).json() for _ in range(4)]
    assert len({r["pid"] for r in warm}) == 1 and warm[0]["pid"] in pids, warm
    assert not any(r["cold"] for r in warm)


def test_past_max_concurrency_requests_wait_for_a_free_sandbox(
    sandboxed: ServeProcess, tmp_path: Path
) -> None:
    results = meet(sandboxed, tmp_path / "meeting", 5, wait=1)
    assert len({r["pid"] for r in results}) == 3, results  # --max-concurrency 3
    assert all(len(r["peers"]) <= 3 for r in results), results


def test_a_function_error_is_500_and_keeps_its_sandbox_warm(sandboxed: ServeProcess) -> None:
    before = get(sandboxed, "/fragile/ok").json()["pid"]
    response = get(sandboxed, "/fragile/raise")
    assert (response.status_code, response.json()) == (500, {"message": "Internal Server Error"})
    after = get(sandboxed, "/fragile/ok").json()
    assert after["pid"] == before and not after["cold"]
    log = log_of(sandboxed, waiting_for="GET /fragile/raise 500")
    assert "FragileFunction" in log and "ValueError: raised on purpose" in log


def test_a_crashed_sandbox_is_500_and_replaced(sandboxed: ServeProcess) -> None:
    before = get(sandboxed, "/fragile/ok").json()["pid"]
    response = get(sandboxed, "/fragile/crash")
    assert (response.status_code, response.json()) == (500, {"message": "Internal Server Error"})
    assert not alive(before)  # gone and reaped
    after = get(sandboxed, "/fragile/ok").json()
    assert after["pid"] != before and after["cold"]
    assert "exit code 3" in log_of(sandboxed, waiting_for="GET /fragile/crash 500")


def test_a_function_past_its_timeout_is_503_and_its_sandbox_replaced(sandboxed: ServeProcess) -> None:
    before = get(sandboxed, "/fragile/ok").json()["pid"]
    started = time.monotonic()
    response = get(sandboxed, "/fragile/hang")
    elapsed = time.monotonic() - started
    assert (response.status_code, response.json()) == (503, {"message": "Service Unavailable"})
    assert 1 <= elapsed < 10  # the Globals' Timeout: 1
    assert not alive(before)
    assert get(sandboxed, "/fragile/ok").json()["pid"] != before
    assert "ran past its Timeout of 1 s" in log_of(sandboxed, waiting_for="GET /fragile/hang 503")


def test_stopping_lets_invocations_finish_and_ends_every_sandbox(tmp_path: Path) -> None:
    with sandbox_server(tmp_path, "--max-concurrency", "2") as server:
        pids = {r["pid"] for r in meet(server, tmp_path / "meeting", 2)}
        assert len(pids) == 2
        in_flight = tmp_path / "in-flight"
        in_flight.mkdir()
        answers: list[requests.Response] = []
        params = {"meet": str(in_flight), "n": "1", "sleep": "1"}
        request = threading.Thread(
            target=lambda: answers.append(requests.get(server.url + "/work", params=params, timeout=30))
        )
        request.start()
        deadline = time.monotonic() + 10
        while not any(in_flight.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.stop() == 0  # Ctrl-C, with an invocation running
        request.join()
        assert [a.status_code for a in answers] == [200]
    assert not any(alive(pid) for pid in pids)
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log and "GET /work 200" in log


def test_max_concurrency_must_be_positive() -> None:
    result = expconsole("serve", "--max-concurrency", "0")
    assert result.returncode == 2 and "--max-concurrency" in result.stderr


# --- state, keys and lifecycle ----------------------------------------------------------------


def test_state_survives_a_restart_and_ephemeral_starts_empty(tmp_path: Path) -> None:
    """Keys (made with and without a server running) and items outlive a Ctrl-C and a restart."""
    data_dir = tmp_path / ".expconsole"
    created = expconsole("keys", "create", "--kind", "server", "--description", "ci", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert secret.startswith("secret-") and "\n" not in secret and "shown only now" in created.stderr

    log = tmp_path / "first.log"
    item = {"PK": {"S": "TEST#1"}, "SK": {"S": "CURRENT"}, "n": {"N": "7"}}
    with serve("--template", TEMPLATE, cwd=tmp_path, stderr=log) as first:
        assert (data_dir / "backend.json").exists()
        assert get(first, GATES, key=secret).status_code == 403  # known, and a server secret
        created = expconsole("keys", "create", "--kind", "console", cwd=tmp_path)  # via the running server
        assert created.returncode == 0, created.stderr
        key = created.stdout.strip()
        assert get(first, GATES, key=key).status_code == 200
        dynamodb(first.backend_endpoint).put_item(TableName="expconsole", Item=item)

        second = expconsole("serve", "--port", "0", "--template", TEMPLATE, cwd=tmp_path)
        assert second.returncode == 1 and "in use" in second.stderr

        started = time.monotonic()
        assert first.stop() == 0  # SIGINT
        assert time.monotonic() - started < 5
    first_log = log.read_text()
    assert "Traceback" not in first_log and key not in first_log and secret not in first_log
    assert not (data_dir / "backend.json").exists()

    with serve("--template", TEMPLATE, cwd=tmp_path) as again:
        assert get(again, GATES, key=key).status_code == 200
        assert get(again, GATES, key=secret).status_code == 403
        stored = dynamodb(again.backend_endpoint).get_item(TableName="expconsole", Key=key_of(item))
        assert stored["Item"] == item
    journal = (data_dir / "journal.jsonl").read_bytes()

    with serve("--ephemeral", "--template", TEMPLATE, cwd=tmp_path) as ephemeral:
        assert get(ephemeral, GATES, key=key).status_code == 401
        missing = dynamodb(ephemeral.backend_endpoint).get_item(TableName="expconsole", Key=key_of(item))
        assert "Item" not in missing
    assert (data_dir / "journal.jsonl").read_bytes() == journal

    conflict = expconsole("serve", "--port", "0", "--template", TEMPLATE, "--api-key", secret, cwd=tmp_path)
    assert conflict.returncode == 2 and "already registered as a server key" in conflict.stderr


def test_keys_list_shows_ids_and_kinds_but_never_values(tmp_path: Path) -> None:
    created = expconsole("keys", "create", "--kind", "console", "--description", "laptop", cwd=tmp_path)
    listed = expconsole("keys", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.strip().splitlines()
    assert (
        header.split()[:3] == ["KEY", "ID", "KIND"] and row.split()[1] == "console" and row.endswith("laptop")
    )
    assert created.stdout.strip() not in listed.stdout


def test_help_works() -> None:
    result = expconsole("--help")
    assert result.returncode == 0 and "serve" in result.stdout and "keys" in result.stdout
