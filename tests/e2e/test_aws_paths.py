"""End-to-end: the CLI's `--aws` paths against a stand-in account (see aws_account.py).

Every command runs as a user pointed at a deployed stack would run it: a separate process with
AWS_ENDPOINT_URL (moto's server), credentials and a region, and `--aws --stack-name`, so that it
finds the table and bucket through the stack's outputs. What each command did is then read
from the account itself (the stack's table and bucket) or through `serve --aws`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests

from expconsole_tools.local.process import ServeProcess
from tests.e2e import aws_account
from tests.e2e.aws_account import StandInAccount
from tests.e2e.buyers import INGEST, expected_welch, send_buyers, start_buyers_experiment
from tests.e2e.client import ApiClient
from tests.e2e.conftest import REPO


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("aws-paths")


@pytest.fixture(scope="module")
def account(logs: Path) -> Iterator[StandInAccount]:
    with aws_account.moto_server(logs / "moto.log") as endpoint:
        deployed = aws_account.deploy(endpoint)
        with aws_account.import_function(deployed, logs / "import-function.log"):
            yield deployed


@pytest.fixture(scope="module")
def served(account: StandInAccount, logs: Path) -> Iterator[ServeProcess]:
    with ServeProcess(
        "--aws",
        "--stack-name",
        account.stack_name,
        "--port",
        "0",
        "--quiet",
        "--no-warm",
        cwd=REPO,
        env=account.env,
        stderr=logs / "serve.log",
    ) as process:
        yield process


def stack_items(account: StandInAccount, doc_contains: str) -> list[dict[str, Any]]:
    """The items of the stack's table whose `doc` (an entity's JSON) contains a string (a scan)."""
    paginator = account.client("dynamodb").get_paginator("scan")
    pages = paginator.paginate(
        TableName=account.table,
        FilterExpression="contains(doc, :text)",
        ExpressionAttributeValues={":text": {"S": doc_contains}},
    )
    return [item for page in pages for item in page["Items"]]


def bucket_keys(account: StandInAccount, prefix: str) -> list[str]:
    paginator = account.client("s3").get_paginator("list_objects_v2")
    return [
        o["Key"]
        for page in paginator.paginate(Bucket=account.bucket, Prefix=prefix)
        for o in page.get("Contents", [])
    ]


def test_keys_create_writes_to_the_stack_table_and_the_key_works_against_serve(
    account: StandInAccount, served: ServeProcess
) -> None:
    created = account.cli(
        "keys",
        "create",
        "--aws",
        "--stack-name",
        account.stack_name,
        "--kind",
        "console",
        "--description",
        "platform team",
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("console-"), created.stdout
    assert f"table {account.table}" in created.stderr

    listed = account.cli("keys", "list", "--aws", "--stack-name", account.stack_name)
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if line.endswith("platform team")]
    assert key not in listed.stdout  # only its id and hash are stored
    key_id = row.split()[0]
    (item,) = stack_items(account, key_id)
    assert key not in json.dumps(item, default=str)

    gates = requests.get(f"{served.url}/console/v1/gates", headers={"SERVICE-API-KEY": key}, timeout=30)
    assert gates.status_code == 200, gates.text
    wrong = requests.get(
        f"{served.url}/console/v1/gates", headers={"SERVICE-API-KEY": key[:-1] + "x"}, timeout=30
    )
    assert wrong.status_code == 401

    server = account.cli("keys", "create", "--aws", "--stack-name", account.stack_name, "--kind", "server")
    assert server.returncode == 0, server.stderr
    secret = server.stdout.strip()
    specs = requests.get(
        f"{served.url}/v1/download_config_specs/{secret}.json",
        headers={"STATSIG-API-KEY": secret},
        timeout=30,
    )
    assert specs.status_code == 200, specs.text
    as_console = requests.get(
        f"{served.url}/console/v1/gates", headers={"SERVICE-API-KEY": secret}, timeout=30
    )
    assert as_console.status_code == 403

    # keys deactivate --aws: a key deactivated before any use is refused (none cached its verdict).
    spare = account.cli(
        "keys",
        "create",
        "--aws",
        "--stack-name",
        account.stack_name,
        "--kind",
        "console",
        "--description",
        "spare",
    )
    assert spare.returncode == 0, spare.stderr
    listed = account.cli("keys", "list", "--aws", "--stack-name", account.stack_name)
    (spare_row,) = [line for line in listed.stdout.splitlines() if line.endswith("spare")]
    off = account.cli("keys", "deactivate", spare_row.split()[0], "--aws", "--stack-name", account.stack_name)
    assert off.returncode == 0, off.stderr
    refused = requests.get(
        f"{served.url}/console/v1/gates", headers={"SERVICE-API-KEY": spare.stdout.strip()}, timeout=30
    )
    assert refused.status_code == 401


def test_a_missing_stack_is_named(account: StandInAccount) -> None:
    missing = account.cli("keys", "list", "--aws", "--stack-name", "no-such-stack")
    assert missing.returncode == 1
    assert "no-such-stack" in missing.stderr and "Traceback" not in missing.stderr


def test_a_missing_region_is_named_before_anything_is_read(account: StandInAccount, tmp_path: Path) -> None:
    """AWS_REGION alone (what the AWS CLI reads) is not enough for boto3: say so, touch nothing."""
    env = {k: v for k, v in account.env.items() if k != "AWS_DEFAULT_REGION"}
    env.update(AWS_REGION=aws_account.REGION, AWS_CONFIG_FILE=str(tmp_path / "no-config"))
    for command in (["keys", "list"], ["pulse", "--no-progress"], ["serve", "--port", "0"]):
        result = account.cli(*command, "--aws", "--stack-name", account.stack_name, env=env)
        assert result.returncode == 1, (command, result.stdout, result.stderr)
        assert "no AWS region: set AWS_DEFAULT_REGION" in result.stderr, (command, result.stderr)
    # Also when the table and bucket are named directly (no stack read that would fail on its own).
    named = {**env, "TABLE_NAME": account.table, "EVENTS_BUCKET": account.bucket}
    result = account.cli("keys", "list", "--aws", env=named)
    assert result.returncode == 1 and "no AWS region" in result.stderr, result.stderr


def test_serve_writes_to_the_stack_and_serves_the_sdk_from_its_bucket(
    account: StandInAccount, console: ApiClient, sender: ApiClient, served: ServeProcess
) -> None:
    name = f"aws_gate_{uuid.uuid4().hex[:8]}"
    resp = console.post("/console/v1/gates", json={"name": name, "description": "on the stand-in"})
    assert resp.status_code == 201, resp.text
    assert stack_items(account, name), "the gate is not in the stack's table"
    assert console.get(f"/console/v1/gates/{resp.json()['data']['id']}").status_code == 200

    # The SDK document is built from the table's stream into the stack's bucket, then served from it.
    url = f"{served.url}/v1/download_config_specs/{served.server_secret}.json"
    deadline = time.monotonic() + 60
    while True:
        specs = requests.get(url, headers={"STATSIG-API-KEY": served.server_secret}, timeout=30)
        assert specs.status_code == 200, specs.text
        if name in {g["name"] for g in specs.json()["feature_gates"]} or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert name in {g["name"] for g in specs.json()["feature_gates"]}
    assert "sdk/specs/v1.json.gz" in bucket_keys(account, "sdk/specs/")

    event = f"aws_event_{uuid.uuid4().hex[:8]}"
    now = int(time.time() * 1000)
    sent = sender.post(INGEST, json=[{"event": event, "user": {"userID": "u1"}, "timestamp": now}])
    assert sent.status_code == 202, sent.text
    day = datetime.fromtimestamp(now / 1000, UTC).date().isoformat()
    assert bucket_keys(account, f"events/date={day}/"), "the event is not in the stack's bucket"
    listed = console.get(f"/console/v1/events/{event}", params={"limit": 10})
    assert listed.status_code == 200, listed.text
    assert [r["userID"] for r in listed.json()["data"]] == ["u1"]


def import_aws(account: StandInAccount, root: Path) -> Any:
    return account.cli(
        "import", str(root), "--aws", "--stack-name", account.stack_name, "--no-progress", "--timeout", "120"
    )


def test_import_lands_in_the_stack_bucket_by_day_and_counts_a_reimport_once(
    account: StandInAccount, console: ApiClient, tmp_path: Path
) -> None:
    name = f"aws_import_{uuid.uuid4().hex[:8]}"
    day = datetime.now(UTC).date() - timedelta(days=2)
    start = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)
    stamps = [start + 3_600_000 * (i + 1) for i in range(3)]
    folder = tmp_path / "export" / day.isoformat()
    folder.mkdir(parents=True)
    lines = [
        json.dumps({"event": name, "user": {"userID": f"i{i}"}, "timestamp": ts})
        for i, ts in enumerate(stamps)
    ]
    lines.append(json.dumps({"event": name, "user": {}, "timestamp": stamps[0]}))  # no unit id: rejected
    (folder / "events.jsonl").write_text("\n".join(lines) + "\n")

    first = import_aws(account, tmp_path / "export")
    assert first.returncode == 0, first.stdout + first.stderr
    assert (
        f"{day}/events.jsonl: 4 rows, 3 accepted, 0 duplicates (already stored), 1 rejected" in first.stdout
    )
    assert f"imports/date={day}/events.jsonl" in bucket_keys(account, f"imports/date={day}/")
    assert bucket_keys(account, f"events/date={day}/"), "no events stored under the day"
    assert (folder / "_rejected.events.jsonl.jsonl").is_file()

    again = import_aws(account, tmp_path / "export")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (
        f"{day}/events.jsonl: 4 rows, 0 accepted, 3 duplicates (already stored), 1 rejected" in again.stdout
    )

    listed = console.get(f"/console/v1/events/{name}", params={"limit": 100})
    assert listed.status_code == 200, listed.text
    assert sorted(int(r["timestamp"]) for r in listed.json()["data"]) == stamps
    summary = console.get(f"/console/v1/events/{name}/summary")
    assert summary.json()["data"]["totalCount"] == 3


def test_pulse_loads_an_experiment_whose_results_serve_reads(
    account: StandInAccount, console: ApiClient, sender: ApiClient
) -> None:
    exp_id, metric, start = start_buyers_experiment(console, "aws")

    group, bought = send_buyers(sender, exp_id, metric, start, seed=5)

    run = account.cli(
        "pulse", "--aws", "--stack-name", account.stack_name, "--experiment", exp_id, "--no-progress"
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Experiment {exp_id}: success" in run.stdout

    resp = console.get(f"/console/v1/experiments/{exp_id}/pulse_results?control=c&test=t&cuped=false")
    assert resp.status_code == 200, resp.text
    (entry,) = resp.json()["data"]["primaryMetrics"]
    delta, p = expected_welch(bought[group == "t"].astype(float), bought[group == "c"].astype(float))
    assert entry["value"] == pytest.approx(delta, rel=1e-9)
    assert entry["p_value"] == pytest.approx(p, rel=1e-9)
    # Without a target: everything due in the account, this experiment among it.
    due = account.cli("pulse", "--aws", "--stack-name", account.stack_name, "--no-progress")
    assert due.returncode == 0, due.stdout + due.stderr
    assert f"Experiment {exp_id}: success" in due.stdout
    history = console.get(f"/console/v1/experiments/{exp_id}/pulse_load_history").json()["data"]
    assert [h["creatorName"] for h in history] == ["expconsole pulse", "expconsole pulse"]
    assert all(h["finishedState"] == "success" for h in history)


def test_keys_serve_generates_work_for_its_run_only_and_given_ones_stay(
    account: StandInAccount, served: ServeProcess, logs: Path
) -> None:
    created = account.cli("keys", "create", "--aws", "--stack-name", account.stack_name, "--kind", "console")
    assert created.returncode == 0, created.stderr
    given = created.stdout.strip()
    secret = account.cli("keys", "create", "--aws", "--stack-name", account.stack_name, "--kind", "server")
    assert secret.returncode == 0, secret.stderr
    common = ("--aws", "--stack-name", account.stack_name, "--port", "0", "--quiet", "--no-warm")
    with ServeProcess(*common, cwd=REPO, env=account.env, stderr=logs / "serve-once.log") as once:
        assert any(line.startswith("Keys: generated ones are deactivated") for line in once.banner)
        assert requests.get(
            f"{once.url}/console/v1/gates", headers={"SERVICE-API-KEY": once.api_key}, timeout=30
        ).ok
    mine = ("--api-key", given, "--server-secret", secret.stdout.strip())
    with ServeProcess(*common, *mine, cwd=REPO, env=account.env, stderr=logs / "serve-given.log") as run:
        assert run.api_key == given
        assert not any(line.startswith("Keys: generated") for line in run.banner)

    # The other server reads the same table: the stopped run's keys are refused, the given one is not.
    def status(key: str) -> int:
        return requests.get(
            f"{served.url}/console/v1/gates", headers={"SERVICE-API-KEY": key}, timeout=30
        ).status_code

    assert status(once.api_key) == 401
    assert (
        requests.post(
            f"{served.url}{INGEST}", json=[], headers={"SERVICE-API-KEY": once.server_secret}, timeout=30
        ).status_code
        == 401
    )
    assert status(given) == 200
    listed = account.cli("keys", "list", "--aws", "--stack-name", account.stack_name)
    assert listed.stdout.count("(inactive)") >= 2, listed.stdout


@pytest.mark.parametrize(
    ("args", "named", "table_env"),
    [
        (["keys", "list", "--aws", "--data-dir", "elsewhere"], "--data-dir", False),
        (["serve", "--aws", "--ephemeral"], "--ephemeral", False),
        (["pulse", "--stack-name", "production"], "--stack-name", False),
        (["import", "export", "--stack-name", "production"], "--stack-name", False),
        (["keys", "list", "--aws", "--stack-name", "production"], "--stack-name", True),
    ],
)
def test_an_option_the_backend_would_ignore_is_refused(
    args: list[str], named: str, table_env: bool, tmp_path: Path
) -> None:
    """--data-dir and --ephemeral mean nothing with --aws, --stack-name nothing without it (nor when
    TABLE_NAME and EVENTS_BUCKET name the table and bucket)."""
    env = {k: v for k, v in os.environ.items() if k not in ("TABLE_NAME", "EVENTS_BUCKET")}
    if table_env:
        env.update(TABLE_NAME="t", EVENTS_BUCKET="b")
    result = subprocess.run(
        [sys.executable, "-m", "expconsole_tools.cli", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert f"error: {named}:" in result.stderr
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / ".expconsole").exists()
