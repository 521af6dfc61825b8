"""template.yaml agrees with the code it deploys, and `sam validate --lint` accepts it.

The template is what gets deployed and what the local server reads its routes from, so drift
between it, the store's table schema, the functions' resolvers and the sample events would
otherwise only show up after a deploy.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import tomllib
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from aws_lambda_powertools.event_handler import APIGatewayHttpResolver
from moto import mock_aws

from expconsole import aws
from expconsole.services import keys
from expconsole.store import dynamo
from tests.conftest import LAMBDA_CONTEXT

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
EVENTS_DIR = ROOT / "events"
API_KEY_HEADER = "SERVICE-API-KEY"
DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}

Route = tuple[str, str]
# The web console's static files: the only routes that check no key. The pages hold no data
# (they call the API with the user's key), and the function's role may touch nothing.
PUBLIC_FUNCTION = "WebFunction"
PUBLIC_ROUTES = {("GET", "/"), ("GET", "/ui/{path+}")}


class _CfnLoader(yaml.SafeLoader):
    """A SafeLoader that reads CloudFormation short tags (`!Ref X`) as their long form."""


def _cfn_tag(loader: _CfnLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    value: Any
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix in ("Ref", "Condition"):
        return {suffix: value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


_CfnLoader.add_multi_constructor("!", _cfn_tag)


@functools.cache
def _template() -> dict[str, Any]:
    return yaml.load(TEMPLATE.read_text(), Loader=_CfnLoader)


def _resources(kind: str) -> dict[str, dict[str, Any]]:
    return {name: res for name, res in _template()["Resources"].items() if res["Type"] == kind}


def _functions() -> dict[str, dict[str, Any]]:
    return {name: res["Properties"] for name, res in _resources("AWS::Serverless::Function").items()}


def _http_events(props: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: event.get("Properties") or {}
        for name, event in (props.get("Events") or {}).items()
        if event["Type"] == "HttpApi"
    }


def _routes(props: dict[str, Any]) -> list[Route]:
    return [(str(p.get("Method", "")).upper(), str(p.get("Path", ""))) for p in _http_events(props).values()]


def _code_dir(props: dict[str, Any]) -> Path:
    return ROOT / props["CodeUri"]


KEYLESS_FUNCTION = "DocsFunction"


def _route_function_ids() -> list[str]:
    """Functions whose routes a Powertools resolver declares (the keyless docs function answers
    its few routes and the `$default` route by routeKey, and the static-files function is a plain
    handler, both without a resolver)."""
    return [
        name
        for name, props in _functions().items()
        if _http_events(props) and name not in (KEYLESS_FUNCTION, PUBLIC_FUNCTION)
    ]


def _api() -> tuple[str, dict[str, Any]]:
    apis = _resources("AWS::Serverless::HttpApi")
    assert len(apis) == 1, f"expected one HttpApi, found {sorted(apis)}"
    name, api = next(iter(apis.items()))
    return name, api["Properties"]


def _defines_at_module_level(source: Path, name: str) -> bool:
    """Whether `name` is bound at the top of the module (def, assignment or import)."""
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
                return True
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            return True
    return False


def _load_function(code_dir: Path) -> ModuleType:
    """Import functions/<dir>/app.py by path under a unique name (every function's module is `app`)."""
    name = f"_expconsole_function_{code_dir.name}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, code_dir / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered before running, so pydantic can resolve the module's postponed annotations.
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _sam_cli() -> Path:
    candidates = [Path(os.environ["SAM_CLI"])] if os.environ.get("SAM_CLI") else []
    candidates.append(ROOT / ".venv-sam" / "bin" / "sam")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail(f"sam CLI not found (tried {', '.join(map(str, candidates))}): run `make install-sam`")


# --- sam validate ---------------------------------------------------------------------------


@pytest.mark.sam
def test_sam_validate_lint_passes() -> None:
    env = {**os.environ, **DUMMY_AWS_ENV, "SAM_CLI_TELEMETRY": "0"}
    result = subprocess.run(
        [str(_sam_cli()), "validate", "--lint", "--template", str(TEMPLATE), "--region", "us-east-1"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"sam validate --lint failed:\n{result.stdout}\n{result.stderr}"


@pytest.mark.sam
def test_cfn_lint_passes() -> None:
    cfn_lint = _sam_cli().parent / "cfn-lint"
    assert cfn_lint.is_file(), f"{cfn_lint} is missing: aws-sam-cli installs it (make install-sam)"
    result = subprocess.run(
        [str(cfn_lint), str(TEMPLATE)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, f"cfn-lint found problems:\n{result.stdout}\n{result.stderr}"


# --- runtime and layers ---------------------------------------------------------------------

RUNTIME = "python3.12"
ARCHITECTURE = "x86_64"
# Layers by need (the CRUD functions have the global core layer only).
HEAVY_LAYERS = {
    "ResultsFunction": {"NumericLayer"},
    "ImportFunction": {"SqlLayer"},
    # SQL only: per-unit values and group sums in DuckDB, the SRM p-value with mpmath.
    "PulseFunction": {"SqlLayer"},
}


def test_every_function_runs_python312_on_x86_64() -> None:
    function_globals = _template()["Globals"]["Function"]
    assert function_globals["Runtime"] == RUNTIME
    assert function_globals["Architectures"] == [ARCHITECTURE]
    for name, props in _functions().items():
        assert props.get("Runtime", RUNTIME) == RUNTIME, name
        assert props.get("Architectures", [ARCHITECTURE]) == [ARCHITECTURE], name


def test_layers_are_built_for_the_functions_runtime() -> None:
    layers = _resources("AWS::Serverless::LayerVersion")
    assert set(layers) == {"CoreLayer", "NumericLayer", "SqlLayer"}
    for name, layer in layers.items():
        props, metadata = layer["Properties"], layer["Metadata"]
        assert props["CompatibleRuntimes"] == [RUNTIME], name
        assert props["CompatibleArchitectures"] == [ARCHITECTURE], name
        assert metadata["BuildArchitecture"] == ARCHITECTURE, name
        assert metadata["BuildMethod"] in (RUNTIME, "makefile"), name
        content = ROOT / props["ContentUri"]
        if metadata["BuildMethod"] == "makefile":
            # sam build runs `make build-<LogicalId>` in the layer's folder
            makefile = (content / "Makefile").read_text()
            assert re.search(rf"^build-{name}:", makefile, re.MULTILINE), f"{content}: no build-{name}"
        assert (content / "requirements.txt").is_file(), name


def test_functions_carry_the_layers_they_need_and_crud_functions_the_core_layer_only() -> None:
    assert _template()["Globals"]["Function"]["Layers"] == [{"Ref": "CoreLayer"}]
    for name, props in _functions().items():
        own = {layer["Ref"] for layer in props.get("Layers") or []}
        assert own == HEAVY_LAYERS.get(name, set()), f"{name} has {sorted(own)}"


def test_layer_requirements_are_the_projects_dependencies() -> None:
    """The core layer ships the project's runtime dependencies (boto3 comes with Lambda), the
    others what their functions import: a package left out would fail only in AWS."""

    def names(path: Path) -> set[str]:
        lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
        return {re.split(r"[<>=!~\[ ;]", line, maxsplit=1)[0].lower() for line in lines if line}

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower() for d in project["dependencies"]}
    assert names(ROOT / "layers/core/requirements.txt") == runtime - {"boto3"}
    assert names(ROOT / "layers/numeric/requirements.txt") == {"numpy", "scipy"}
    assert names(ROOT / "layers/sql/requirements.txt") == {"duckdb", "sqlglot", "mpmath"}


# --- resources ------------------------------------------------------------------------------


def _by_name(items: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return sorted(items, key=lambda item: item[key])


def test_table_matches_store_schema() -> None:
    tables = _resources("AWS::DynamoDB::Table")
    assert len(tables) == 1, f"the design has one table, the template has {sorted(tables)}"
    props = next(iter(tables.values()))["Properties"]
    schema = dynamo.TABLE_SCHEMA
    assert _by_name(props["AttributeDefinitions"], "AttributeName") == _by_name(
        schema["AttributeDefinitions"], "AttributeName"
    )
    assert props["KeySchema"] == schema["KeySchema"]
    assert _by_name(props["GlobalSecondaryIndexes"], "IndexName") == _by_name(
        schema["GlobalSecondaryIndexes"], "IndexName"
    )
    assert props["BillingMode"] == schema["BillingMode"]
    assert props["TimeToLiveSpecification"] == {"AttributeName": dynamo.TTL_ATTRIBUTE, "Enabled": True}
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_buckets_block_public_access_and_are_encrypted() -> None:
    buckets = _resources("AWS::S3::Bucket")
    assert buckets, "the template declares no bucket"
    for name, bucket in buckets.items():
        props = bucket["Properties"]
        assert props["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }, name
        rules = props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        algorithms = {rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] for rule in rules}
        assert algorithms and algorithms <= {"AES256", "aws:kms", "aws:kms:dsse"}, name


def test_every_route_is_on_the_one_api_and_only_the_keyless_functions_have_no_data_access() -> None:
    """Keys are checked in the functions (tests/unit/test_template_security.py: no authorizer)."""
    api_name, _ = _api()
    for function, props in _functions().items():
        for event, event_props in _http_events(props).items():
            assert event_props.get("ApiId") == {"Ref": api_name}, f"{function}.{event} is not on {api_name}"
    # The one function without a key (docs, openapi.json, health, $default) can touch no data.
    keyless = _functions()[KEYLESS_FUNCTION]
    assert not keyless.get("Policies") and not keyless.get("Environment"), keyless


def test_only_the_static_files_are_public_and_their_function_has_no_permissions() -> None:
    public = _functions()[PUBLIC_FUNCTION]
    assert set(_routes(public)) == PUBLIC_ROUTES
    assert not public.get("Policies"), "the public function must not reach the table or the bucket"
    assert not (public.get("Layers") or []), "only the core layer (which holds the files)"


def test_routes_are_unique_and_complete() -> None:
    routes = [route for props in _functions().values() for route in _routes(props)]
    assert routes.count(("", "")) == 1, "exactly one $default route (no Path nor Method)"
    assert _routes(_functions()[KEYLESS_FUNCTION]).count(("", "")) == 1, "the docs function answers $default"
    routes = [route for route in routes if route != ("", "")]
    assert routes, "the template declares no HttpApi route"
    assert all(method and path.startswith("/") for method, path in routes), routes
    duplicates = sorted(route for route, count in Counter(routes).items() if count > 1)
    assert not duplicates, f"routes declared twice: {duplicates}"


@pytest.mark.parametrize("logical_id", sorted(_functions()))
def test_function_code_defines_its_handler(logical_id: str) -> None:
    props = _functions()[logical_id]
    handler = props.get("Handler") or _template()["Globals"]["Function"]["Handler"]
    assert handler == "app.lambda_handler"
    source = _code_dir(props) / "app.py"
    assert source.is_file(), f"{logical_id}: {source.relative_to(ROOT)} does not exist"
    assert _defines_at_module_level(source, "lambda_handler"), f"{source} defines no lambda_handler"


# --- resolvers ------------------------------------------------------------------------------


def _template_path(powertools_path: str) -> str:
    """Powertools writes path parameters as `<id>`, API Gateway as `{id}`."""
    return re.sub(r"<(\w+)>", r"{\1}", powertools_path)


@pytest.mark.parametrize("logical_id", _route_function_ids())
def test_resolver_routes_equal_template_routes(logical_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in DUMMY_AWS_ENV.items():
        monkeypatch.setenv(key, value)
    code_dir = _code_dir(_functions()[logical_id])
    assert (code_dir / "app.py").is_file(), f"CodeUri {code_dir.relative_to(ROOT)} has no app.py"
    app = getattr(_load_function(code_dir), "app", None)
    assert isinstance(app, APIGatewayHttpResolver), (
        f"{code_dir.name}/app.py has no module-level resolver `app`"
    )
    declared = {
        (route.method, _template_path(route.path)) for route in [*app._static_routes, *app._dynamic_routes]
    }
    in_template = set(_routes(_functions()[logical_id]))
    assert not declared - in_template, f"routes missing from template.yaml: {sorted(declared - in_template)}"
    assert not in_template - declared, f"routes the resolver lacks: {sorted(in_template - declared)}"


def _a_request_path(route_path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", route_path)


@pytest.mark.parametrize("logical_id", _route_function_ids())
@pytest.mark.parametrize(
    ("headers", "said"),
    [
        ({}, "Missing API key: send it in the SERVICE-API-KEY"),
        (
            {"authorization": "Bearer console-sample-key-for-sam-local-invoke-not-a-real-key"},
            "not Authorization",
        ),
    ],
    ids=["no-key", "bearer"],
)
def test_every_route_answers_a_request_without_the_key_header_with_a_401_naming_it(
    logical_id: str, headers: dict[str, str], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each keyed function checks the key itself, before its route: API Gateway has no authorizer
    to answer first with its bare `{"message": "Unauthorized"}` (no storage is read for this)."""
    for key, value in DUMMY_AWS_ENV.items():
        monkeypatch.setenv(key, value)
    handler = _load_function(_code_dir(_functions()[logical_id])).lambda_handler
    for method, path in _routes(_functions()[logical_id]):
        event = {
            "version": "2.0",
            "routeKey": f"{method} {path}",
            "rawPath": _a_request_path(path),
            "rawQueryString": "",
            "headers": {"host": "h", "content-type": "application/json", **headers},
            "requestContext": {
                "http": {"method": method, "path": _a_request_path(path), "sourceIp": "1.2.3.4"},
                "requestId": "r",
                "routeKey": f"{method} {path}",
                "stage": "$default",
            },
            "isBase64Encoded": False,
        }
        response = handler(event, LAMBDA_CONTEXT)
        body = json.loads(response["body"])
        assert (response["statusCode"], body["status"]) == (401, 401), (method, path, body)
        assert said in body["message"] and "SERVICE-API-KEY" in body["message"], body
        assert body["errors"][0]["field"] == API_KEY_HEADER, body


# --- sample events --------------------------------------------------------------------------


def _event_files() -> list[Path]:
    return sorted(EVENTS_DIR.glob("*.json"))


def _http_event_files() -> list[Path]:
    """The sample HTTP API requests (the stream and EventBridge events are matched to their
    functions by test_there_is_a_sample_event_per_function)."""
    return [
        path
        for path in _event_files()
        if not _is_stream(event := json.loads(path.read_text())) and not _is_eventbridge(event)
    ]


def _is_stream(event: dict[str, Any]) -> bool:
    return bool(event.get("Records")) and event["Records"][0].get("eventSource") == "aws:dynamodb"


def _is_eventbridge(event: dict[str, Any]) -> bool:
    return "detail-type" in event and "routeKey" not in event


def _eventbridge_functions(event: dict[str, Any]) -> list[str]:
    """Functions with an EventBridgeRule whose pattern names the event's source and detail-type
    (or with a schedule, for a scheduled event)."""
    owners = []
    for name, props in _functions().items():
        for rule in (props.get("Events") or {}).values():
            if rule["Type"] in ("Schedule", "ScheduleV2"):
                pattern = {"source": ["aws.events"], "detail-type": ["Scheduled Event"]}
            elif rule["Type"] == "EventBridgeRule":
                pattern = (rule.get("Properties") or {}).get("Pattern") or {}
            else:
                continue
            if event["source"] in pattern.get("source", []) and event["detail-type"] in pattern.get(
                "detail-type", []
            ):
                owners.append(name)
    return owners


def _function_for(event: dict[str, Any]) -> str:
    """The function an event is for: the one whose route matches routeKey, or the one whose
    EventBridge rule (or table stream) invokes it."""
    if _is_stream(event):
        owners = [
            n
            for n, p in _functions().items()
            if any(e["Type"] == "DynamoDB" for e in (p.get("Events") or {}).values())
        ]
        assert owners, "no function of template.yaml reads the table's stream"
        return owners[0]
    if _is_eventbridge(event):
        owners = _eventbridge_functions(event)
        assert owners, f"no rule of template.yaml matches {event['source']}/{event['detail-type']}"
        return owners[0]
    route = tuple(event["routeKey"].split(" ", 1))
    owners = [name for name, props in _functions().items() if route in _routes(props)]
    assert owners, f"routeKey {event['routeKey']!r} is not a route of template.yaml"
    return owners[0]


def test_there_is_a_sample_event_per_function() -> None:
    covered = {_function_for(json.loads(path.read_text())) for path in _event_files()}
    assert set(_functions()) - covered == set(), "functions without a sample event in events/"


@pytest.mark.parametrize("path", _http_event_files(), ids=lambda p: p.stem)
def test_sample_event_is_http_api_v2(path: Path) -> None:
    event = json.loads(path.read_text())
    assert event["version"] == "2.0"
    assert all(name == name.lower() for name in event["headers"]), "HTTP API lowercases header names"
    http = event["requestContext"]["http"]
    assert event["rawPath"] == http["path"]
    assert event["routeKey"] == event["requestContext"]["routeKey"]
    assert event["routeKey"].split(" ", 1)[0] == http["method"]
    # No authorizer runs (template.yaml has none): API Gateway adds no authorizer context.
    assert "authorizer" not in event["requestContext"]
    if _function_for(event) == KEYLESS_FUNCTION:
        assert API_KEY_HEADER.lower() not in event["headers"]
        return
    if tuple(event["routeKey"].split(" ", 1)) in PUBLIC_ROUTES:
        return
    assert event["headers"][API_KEY_HEADER.lower()].startswith(("console-", "secret-"))
    assert event["isBase64Encoded"] is False
    routes = {route for props in _functions().values() for route in _routes(props)}
    assert tuple(event["routeKey"].split(" ", 1)) in routes, f"{event['routeKey']!r} is not in template.yaml"


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An empty table in moto, with the environment a deployed function gets."""
    for key, value in {
        **DUMMY_AWS_ENV,
        "TABLE_NAME": "expconsole-test",
        "EVENTS_BUCKET": "expconsole-test-events",
    }.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    with mock_aws():
        aws.reset()
        keys.reset_cache()
        try:
            dynamo.create_table()
            aws.client("s3").create_bucket(Bucket="expconsole-test-events")
            yield
        finally:
            aws.reset()
            keys.reset_cache()


def _put_imported_file(event: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """For an S3 "Object Created" event: the bucket it names, holding a one-event file at its key."""
    bucket, key = event["detail"]["bucket"]["name"], event["detail"]["object"]["key"]
    monkeypatch.setenv("EVENTS_BUCKET", bucket)
    aws.reset()
    aws.client("s3").create_bucket(Bucket=bucket)
    day = re.search(r"date=(\d{4}-\d{2}-\d{2})/", key)
    assert day, f"{key} is not under imports/date=YYYY-MM-DD/"
    midday = int(datetime.fromisoformat(day.group(1)).replace(tzinfo=UTC).timestamp() * 1000) + 43_200_000
    line = {"event": "sample", "user": {"userID": "u1"}, "timestamp": midday, "metadata": {}}
    aws.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(line) + "\n")


@pytest.mark.parametrize("path", _event_files(), ids=lambda p: p.stem)
def test_sample_event_invokes_its_function(path: Path, table: None, monkeypatch: pytest.MonkeyPatch) -> None:
    event = json.loads(path.read_text())
    logical_id = _function_for(event)
    code_dir = _code_dir(_functions()[logical_id])
    assert (code_dir / "app.py").is_file(), f"CodeUri {code_dir.relative_to(ROOT)} has no app.py"
    handler = _load_function(code_dir).lambda_handler
    presented = (event.get("headers") or {}).get(API_KEY_HEADER.lower())
    if presented:  # the sample's key, registered as `expconsole keys create --key` would
        keys.create_key("console" if presented.startswith("console-") else "server", key=presented)
    if _is_eventbridge(event) and event["source"] == "aws.s3":
        _put_imported_file(event, monkeypatch)
        summary = handler(event, LAMBDA_CONTEXT)
        assert summary["imported"] == 1 and not summary["failed"], summary
        return
    if _is_eventbridge(event):
        handler(event, LAMBDA_CONTEXT)  # not an HTTP function: no status code; it must not raise
        return
    if _is_stream(event):
        built = handler(event, LAMBDA_CONTEXT)
        assert built["changed"] is True and built["time"] > 0, built
        return
    if logical_id == "SdkFunction":
        from expconsole.services.sdk import documents

        documents.rebuild()  # what the stream's first invocation does after a deploy
    response = handler(event, LAMBDA_CONTEXT)
    assert response["statusCode"] < 500, response
    if presented:
        assert response["statusCode"] not in (401, 403), response  # the sample's key is the right kind


# --- operations: logs, alarms, failed asynchronous loads, deploy configuration --------------------


def test_every_function_has_a_log_group_kept_for_the_retention_parameter() -> None:
    groups = {
        res["Properties"]["LogGroupName"]["Fn::Sub"]: res["Properties"]
        for res in _resources("AWS::Logs::LogGroup").values()
    }
    for logical_id in _functions():
        group = groups.get(f"/aws/lambda/${{{logical_id}}}")
        assert group is not None, f"{logical_id} has no log group (its logs would be kept forever)"
        assert group["RetentionInDays"] == {"Ref": "LogRetentionDays"}


def test_every_alarm_notifies_the_alarm_topic() -> None:
    alarms = _resources("AWS::CloudWatch::Alarm")
    assert {
        "ApiServerErrorRateAlarm",
        "ThrottlesAlarm",
        "IngestionErrorsAlarm",
        "PulseRunsFailedAlarm",
    } <= set(alarms)
    for name, alarm in alarms.items():
        props = alarm["Properties"]
        assert props["AlarmActions"] == [{"Ref": "AlarmTopic"}], name
        assert props["TreatMissingData"] == "notBreaching", name  # no traffic is no alarm
        returned = [m for m in props["Metrics"] if m.get("ReturnData", True)]
        assert len(returned) == 1 and "Expression" in returned[0], name


def test_the_stack_metrics_the_alarms_watch_are_written_by_the_code() -> None:
    """An alarm on a metric nobody writes never fires: each of the stack's own metrics (the EMF
    namespace) is written by `observability.count` somewhere in the package."""
    source = "\n".join(p.read_text() for p in (ROOT / "layers/core/expconsole").rglob("*.py"))
    source += "\n".join(p.read_text() for p in (ROOT / "functions").rglob("app.py"))
    written = set(re.findall(r"observability\.count\(\s*\"(\w+)\"", source))
    namespace = _template()["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"]
    watched = set()
    for alarm in _resources("AWS::CloudWatch::Alarm").values():
        for query in alarm["Properties"]["Metrics"]:
            metric = (query.get("MetricStat") or {}).get("Metric")
            if metric and not str(metric["Namespace"]).startswith("AWS/"):
                assert metric["Namespace"] == namespace
                assert metric["Dimensions"] == [{"Name": "service", "Value": "expconsole"}]
                watched.add(metric["MetricName"])
    assert watched and watched <= written, watched - written


def test_a_pulse_load_the_function_cannot_finish_lands_in_a_watched_queue() -> None:
    pulse = _functions()["PulseFunction"]
    failure = pulse["EventInvokeConfig"]["DestinationConfig"]["OnFailure"]
    assert failure == {"Type": "SQS", "Destination": {"Fn::GetAtt": ["PulseDeadLetterQueue", "Arn"]}}
    assert pulse["EventInvokeConfig"]["MaximumRetryAttempts"] == 0  # a timeout would time out again
    watched = [
        q["MetricStat"]["Metric"]
        for q in _template()["Resources"]["PulseRunsFailedAlarm"]["Properties"]["Metrics"]
        if "MetricStat" in q
    ]
    assert {
        "Namespace": "AWS/SQS",
        "MetricName": "NumberOfMessagesSent",
        "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["PulseDeadLetterQueue", "QueueName"]}}],
    } in watched


def test_samconfig_deploys_the_template_with_parameters_it_declares() -> None:
    import tomllib

    config = tomllib.loads((ROOT / "samconfig.toml").read_text())
    deploy = config["default"]["deploy"]["parameters"]
    assert "CAPABILITY_IAM" in deploy["capabilities"]
    params = _template()["Parameters"]
    for pair in deploy["parameter_overrides"]:
        name, _, value = pair.partition("=")
        assert name in params, f"samconfig.toml sets {name}, which template.yaml does not declare"
        allowed = params[name].get("AllowedValues")
        assert allowed is None or value in [str(v) for v in allowed], pair
    assert config["default"]["global"]["parameters"]["stack_name"]


def test_reservations_follow_the_reserve_concurrency_parameter() -> None:
    """An account at the new-account limit (10) refuses any reservation: one switch turns them off."""
    functions = _functions()
    reserved = {
        name: p["ReservedConcurrentExecutions"]
        for name, p in functions.items()
        if "ReservedConcurrentExecutions" in p
    }
    assert set(reserved) == {"PulseFunction", "ImportFunction", "SpecsFunction"}
    for name, value in reserved.items():
        assert value["Fn::If"][0] == "Reserved" and value["Fn::If"][2] == {"Ref": "AWS::NoValue"}, name
