"""A stand-in AWS account for the CLI's `--aws` paths: moto's server as the endpoint, and in it a
CloudFormation stack made of template.yaml's own table and bucket, with its TableName and
EventsBucketName outputs, so that the CLI finds them through describe_stacks as it does in AWS.

What moto's CloudFormation does not apply, and how the stand-in makes up for it:

- AWS::DynamoDB::Table: moto creates the keys, GSIs, stream and SSE, but ignores
  TimeToLiveSpecification and PointInTimeRecoverySpecification. The TTL is applied afterwards
  through the DynamoDB API from the template's own specification; point-in-time recovery is left
  off (nothing in the CLI's paths reads backups).
- AWS::S3::Bucket: moto applies BucketEncryption only. The EventBridge notification (what runs
  the import function) is applied afterwards through the S3 API from the template's
  NotificationConfiguration; the public access block, ownership controls and lifecycle rules are
  left off (moto neither enforces the first two nor expires objects).
- The import function cannot run in moto (its Lambda needs Docker). The template's EventBridge
  rule for it (ImportFunction's ImportObject event, its own pattern) is created in the stack with
  an SQS queue as its target in place of the function, and `ImportFunctionStandIn` (a child
  process) takes each event from the queue and calls the function's real handler with it, with
  the variables the template gives the function: what Lambda does with the rule's events.
- IAM is not enforced: moto's server can check actions but not the Resource element of a
  policy (every resource-scoped statement of the template would deny), so the functions'
  least-privilege policies are not what this account tests.

The region is eu-west-1: the template names none (the deploy picks it), and a region other than
us-east-1 (the laptop backend's, and boto3's S3 fallback) makes a path that assumes it fail here.

Run as `python -m tests.e2e.aws_account import-function ...` it is that child process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expconsole_tools.local.template import load_api, read_template

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "template.yaml"
REGION = "eu-west-1"
STACK_NAME = "expconsole-standin"
_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
# What would send the CLI elsewhere than the stand-in account, or fail it before it gets there.
_UNSET = (
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_ENDPOINT_URL_DYNAMODB",
    "AWS_ENDPOINT_URL_S3",
    "AWS_ENDPOINT_URL_LAMBDA",
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "TABLE_NAME",
    "EVENTS_BUCKET",
)


def stack_template(template: Path = TEMPLATE) -> dict[str, Any]:
    """template.yaml's Table and EventsBucket (definitions untouched), its parameters, its
    TableName/EventsBucketName outputs, and ImportFunction's rule with a queue as its target."""
    document = read_template(template)
    resources = document["Resources"]
    import_event = resources["ImportFunction"]["Properties"]["Events"]["ImportObject"]
    assert import_event["Type"] == "EventBridgeRule", import_event
    return {
        "AWSTemplateFormatVersion": document["AWSTemplateFormatVersion"],
        "Parameters": document.get("Parameters") or {},
        "Resources": {
            "Table": resources["Table"],
            "EventsBucket": resources["EventsBucket"],
            "ImportFunctionQueue": {"Type": "AWS::SQS::Queue", "Properties": {}},
            "ImportFunctionImportObject": {
                "Type": "AWS::Events::Rule",
                "Properties": {
                    "EventPattern": import_event["Properties"]["Pattern"],
                    "Targets": [
                        {"Id": "ImportFunction", "Arn": {"Fn::GetAtt": ["ImportFunctionQueue", "Arn"]}}
                    ],
                },
            },
        },
        "Outputs": {
            "TableName": document["Outputs"]["TableName"],
            "EventsBucketName": document["Outputs"]["EventsBucketName"],
            "ImportFunctionQueueUrl": {"Value": {"Ref": "ImportFunctionQueue"}},
        },
    }


@dataclass
class StandInAccount:
    """The moto server (`endpoint`) and the stack in it; `env` is what the CLI runs with."""

    endpoint: str
    stack_name: str
    table: str
    bucket: str
    queue_url: str
    env: dict[str, str]

    def client(self, service: str) -> Any:
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=_CREDENTIALS["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def cli(
        self, *args: str, timeout: float = 300, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`expconsole <args>` as a user pointed at the account would run it (`env`: instead of theirs)."""
        return subprocess.run(
            [sys.executable, "-m", "expconsole_tools.cli", *args],
            cwd=REPO,
            env=self.env if env is None else env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes], timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.1)
    return False


@contextmanager
def moto_server(log: Path) -> Iterator[str]:
    """`moto_server` in a child process on a free port (its own moto state); yields its endpoint."""
    for _attempt in range(3):
        port = _free_port()
        with log.open("ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-p", str(port)], stdout=out, stderr=out
            )
        if _wait_listening(port, process):
            break
        process.kill()
        process.wait()
    else:
        raise RuntimeError(f"moto_server did not start: {log.read_text()[-2000:]}")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def account_env(endpoint: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _UNSET}
    env.pop("AWS_REGION", None)
    env.update(_CREDENTIALS, AWS_ENDPOINT_URL=endpoint, AWS_DEFAULT_REGION=REGION)
    return env


def deploy(endpoint: str, stack_name: str = STACK_NAME) -> StandInAccount:
    """Create the stack, apply what moto's CloudFormation leaves out, and read its outputs."""
    env = account_env(endpoint)
    account = StandInAccount(endpoint, stack_name, "", "", "", env)
    cloudformation = account.client("cloudformation")
    body = stack_template()
    cloudformation.create_stack(StackName=stack_name, TemplateBody=json.dumps(body))
    stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack["Outputs"]}
    account.table, account.bucket = outputs["TableName"], outputs["EventsBucketName"]
    account.queue_url = outputs["ImportFunctionQueueUrl"]
    table_props = body["Resources"]["Table"]["Properties"]
    account.client("dynamodb").update_time_to_live(
        TableName=account.table, TimeToLiveSpecification=table_props["TimeToLiveSpecification"]
    )
    notification = body["Resources"]["EventsBucket"]["Properties"]["NotificationConfiguration"]
    assert notification["EventBridgeConfiguration"]["EventBridgeEnabled"] is True
    account.client("s3").put_bucket_notification_configuration(
        Bucket=account.bucket, NotificationConfiguration={"EventBridgeConfiguration": {}}
    )
    return account


@contextmanager
def import_function(account: StandInAccount, log: Path) -> Iterator[None]:
    """ImportFunction's stand-in (see the module docstring) in a child process while the block runs."""
    # The template's global function variables (TABLE_NAME and EVENTS_BUCKET: its !Refs resolved).
    variables = load_api(TEMPLATE).environment
    env = {**account.env, **variables, "TABLE_NAME": account.table, "EVENTS_BUCKET": account.bucket}
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.e2e.aws_account", "import-function", account.queue_url],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=out,
        )
    try:
        yield
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class _Context:
    """The attributes of Lambda's context object the handler (Powertools) reads."""

    function_name: str = "ImportFunction"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 2048
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:ImportFunction"
    aws_request_id: str = ""


def _run_import_function(queue_url: str) -> None:
    """Deliver each event of the rule's queue to the import function's handler, as Lambda would."""
    import boto3

    sys.path.insert(0, str(REPO / "functions" / "imports"))
    import app  # functions/imports/app.py, on the path as its own code directory is in Lambda

    sqs = boto3.client("sqs")
    while True:
        messages = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=1).get("Messages", [])
        for message in messages:
            context = _Context(aws_request_id=str(uuid.uuid4()))
            try:
                result = app.lambda_handler(json.loads(message["Body"]), context)
            except Exception:
                # Lambda retries a failed asynchronous invocation: the message comes back.
                traceback.print_exc()
                continue
            print(json.dumps(result), flush=True)
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])


if __name__ == "__main__":
    if sys.argv[1:2] == ["import-function"]:
        _run_import_function(sys.argv[2])
