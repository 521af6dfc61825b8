"""End-to-end tests of the holdout endpoints (create, list, read, full and partial update,
delete, archive, unarchive), every limit at its edge, and the holdout-experiment link kept on
both sides (`holdout.experimentIDs` and `experiment.holdoutIDs`), including under concurrent
edits, over HTTP against the local server.

The server is shared by the whole session, so every test makes its own entities (unique ids)
and narrows list assertions with a tag of its own.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in `tests/functional/test_holdouts_api.py`.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import requests

from tests.e2e.client import assert_error, uid
from tests.functional.test_holdouts_api import (
    EXPERIMENTS,
    HOLDOUTS,
    Console,
    assert_linked,
    full_body,
)

KEY_HEADER = "SERVICE-API-KEY"


@pytest.fixture(scope="module")
def console(server: Any) -> Console:
    return Console(server.url, server.api_key)


# --- create and read -----------------------------------------------------------------------------------

HOLDOUT_FIELDS = {
    "id",
    "name",
    "description",
    "idType",
    "isEnabled",
    "isGlobal",
    "passPercentage",
    "gateIDs",
    "experimentIDs",
    "layerIDs",
    "targetingGateID",
    "targetApps",
    "tags",
    "team",
    "permalink",
    "version",
    "owner",
    "creatorID",
    "creatorName",
    "creatorEmail",
    "createdTime",
    "lastModifierID",
    "lastModifierName",
    "lastModifierEmail",
    "lastModifiedTime",
}


def test_create_derives_id_from_name_and_fills_defaults(console: Console) -> None:
    suffix = uid()
    resp = console.post(HOLDOUTS, json={"name": f"Team Holdout {suffix.upper()}"})
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert isinstance(body["message"], str) and body["message"]
    holdout = body["data"]
    assert holdout.keys() >= HOLDOUT_FIELDS, f"missing: {HOLDOUT_FIELDS - holdout.keys()}"
    assert holdout["id"] == f"team_holdout_{suffix}"
    assert holdout["name"] == f"Team Holdout {suffix.upper()}"
    assert holdout["description"] == "" and holdout["idType"] == "userID"
    assert holdout["isEnabled"] is True and holdout["isGlobal"] is False
    assert holdout["isArchived"] is False
    assert holdout["passPercentage"] == 0
    assert holdout["gateIDs"] == [] and holdout["experimentIDs"] == [] and holdout["layerIDs"] == []
    assert holdout["targetingGateID"] is None  # "or null": present, null when unset
    assert holdout["team"] is None
    assert holdout["version"] == 1 and isinstance(holdout["version"], int)
    assert holdout["creatorName"] == "CONSOLE API" and holdout["lastModifierName"] == "CONSOLE API"
    assert holdout["owner"]["ownerType"] == "SDK_KEY" and holdout["owner"]["ownerName"] == "CONSOLE API"
    assert holdout["createdTime"] == holdout["lastModifiedTime"] > 1_600_000_000_000
    assert holdout["permalink"].endswith(f"/holdouts/{holdout['id']}")
    assert console.holdout(holdout["id"]) == holdout


def test_get_unknown_holdout_is_404(console: Console) -> None:
    assert_error(console.get(f"{HOLDOUTS}/no_such_holdout_{uid()}"), 404)


def test_keys_are_checked(console: Console, server: Any) -> None:
    holdout = console.create_holdout()
    for path in (HOLDOUTS, f"{HOLDOUTS}/{holdout['id']}"):
        missing = console.get(path, key=None)  # answered by the gateway: a message only
        assert missing.status_code == 401 and isinstance(missing.json()["message"], str), missing.text
        assert_error(console.get(path, key="console-not-a-real-key"), 401)
        assert_error(console.get(path, key=server.server_secret), 403)
    assert_error(console.post(HOLDOUTS, key=server.server_secret, json={"name": f"by secret {uid()}"}), 403)
    assert_error(console.delete(f"{HOLDOUTS}/{holdout['id']}", key=server.server_secret), 403)
    assert console.holdout(holdout["id"]) == holdout


# --- the link, from the holdout's side ------------------------------------------------------------------


def test_adding_and_removing_experiments_updates_their_holdout_ids(console: Console) -> None:
    one, two, three = (console.create_experiment() for _ in range(3))
    holdout = console.create_holdout(experimentIDs=[one["id"], two["id"]])
    path = f"{HOLDOUTS}/{holdout['id']}"
    after_create = console.experiment(one["id"])
    assert after_create["holdoutIDs"] == [holdout["id"]]
    assert after_create["version"] == one["version"] + 1  # the experiment changed: a new version
    assert after_create["lastModifiedTime"] >= one["lastModifiedTime"]
    resp = console.patch(path, json={"experimentIDs": [two["id"], three["id"]]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["experimentIDs"] == [two["id"], three["id"]]
    assert console.experiment(one["id"])["holdoutIDs"] == []
    assert console.experiment(two["id"])["holdoutIDs"] == [holdout["id"]]
    assert console.experiment(two["id"])["version"] == two["version"] + 1  # unchanged: no new version
    assert console.experiment(three["id"])["holdoutIDs"] == [holdout["id"]]
    assert_linked(console, [holdout["id"]], [one["id"], two["id"], three["id"]])


# --- concurrency -----------------------------------------------------------------------------------------


def test_link_stays_consistent_under_concurrent_edits(console: Console) -> None:
    """10 threads add and remove experiments to and from holdouts (from both sides) and edit
    those experiments, all at once. Every answer is 200 or 409, and afterwards the two sides
    of the link agree for every pair."""
    holdouts = [console.create_holdout()["id"] for _ in range(3)]
    experiments = [console.create_experiment()["id"] for _ in range(6)]
    url = console.url
    headers = {KEY_HEADER: console.key}

    def toggled(values: list[str], value: str) -> list[str]:
        return [v for v in values if v != value] if value in values else [*values, value]

    def worker(seed: int) -> list[tuple[str, int, str]]:
        rng = random.Random(seed)
        out = []
        for _ in range(8):
            h, e = rng.choice(holdouts), rng.choice(experiments)
            op = rng.choice(["holdout_patch", "holdout_full", "experiment_link", "experiment_edit"])
            if op == "holdout_patch":
                current = requests.get(f"{url}{HOLDOUTS}/{h}", headers=headers, timeout=60).json()["data"]
                body = {"experimentIDs": toggled(current["experimentIDs"], e)}
                resp = requests.patch(f"{url}{HOLDOUTS}/{h}", json=body, headers=headers, timeout=60)
            elif op == "holdout_full":
                chosen = rng.sample(experiments, rng.randint(0, 3))
                body = full_body(experimentIDs=chosen, passPercentage=rng.randint(0, 10))
                resp = requests.post(f"{url}{HOLDOUTS}/{h}", json=body, headers=headers, timeout=60)
            elif op == "experiment_link":
                current = requests.get(f"{url}{EXPERIMENTS}/{e}", headers=headers, timeout=60).json()["data"]
                body = {"holdoutIDs": toggled(current["holdoutIDs"], h)}
                resp = requests.patch(f"{url}{EXPERIMENTS}/{e}", json=body, headers=headers, timeout=60)
            else:
                body = {"description": f"edit {seed} {rng.random()}"}
                resp = requests.patch(f"{url}{EXPERIMENTS}/{e}", json=body, headers=headers, timeout=60)
            out.append((op, resp.status_code, resp.text))
        return out

    with ThreadPoolExecutor(max_workers=10) as pool:
        results = [r for rs in pool.map(worker, range(10)) for r in rs]

    unexpected = [(op, code, text) for op, code, text in results if code not in (200, 409)]
    assert not unexpected, unexpected
    succeeded = {op for op, code, _ in results if code == 200}
    assert {"holdout_patch", "holdout_full", "experiment_link"} & succeeded, results
    for _op, code, text in results:
        if code == 409:
            assert '"status": 409' in text or '"status":409' in text, text
    assert_linked(console, holdouts, experiments)
    # The link agrees with every holdout's and experiment's own listing, both ways.
    for h in holdouts:
        for e in console.holdout(h)["experimentIDs"]:
            assert h in console.experiment(e)["holdoutIDs"]
    for e in experiments:
        for h in console.experiment(e)["holdoutIDs"]:
            assert e in console.holdout(h)["experimentIDs"]


def test_concurrent_holdout_deletes_and_experiment_links_stay_consistent(console: Console) -> None:
    """Experiments join holdouts while those holdouts are deleted: no experiment is left
    listing a holdout that no longer exists."""
    experiments = [console.create_experiment()["id"] for _ in range(4)]
    holdouts = [console.create_holdout(experimentIDs=experiments[:2])["id"] for _ in range(4)]
    headers = {KEY_HEADER: console.key}

    def delete(h: str) -> requests.Response:
        return requests.delete(f"{console.url}{HOLDOUTS}/{h}", headers=headers, timeout=60)

    def join(e: str) -> requests.Response:
        return requests.patch(
            f"{console.url}{EXPERIMENTS}/{e}", json={"holdoutIDs": holdouts}, headers=headers, timeout=60
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(delete, h) for h in holdouts] + [pool.submit(join, e) for e in experiments]
        responses = [f.result() for f in futures]
    # A join may find a holdout gone (400 naming it), lose a race (409) or win (200).
    unexpected = [(r.status_code, r.text) for r in responses if r.status_code not in (200, 400, 404, 409)]
    assert not unexpected, unexpected
    existing = [h for h in holdouts if console.get(f"{HOLDOUTS}/{h}").status_code == 200]
    for e in experiments:
        listed = console.experiment(e)["holdoutIDs"]
        assert set(listed) <= set(existing), (e, listed, existing)
    assert_linked(console, existing, experiments)
