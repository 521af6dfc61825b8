"""End-to-end tests of the gate endpoints: create, read, update, delete, errors, auth, derived
type, list filters, pagination and concurrent updates, over HTTP against the local server.

The server is shared by the whole session, so every test makes its own gates (unique ids) and
narrows list assertions with a tag of its own. Rule endpoints are in `test_gates_rules.py`,
lifecycle actions, versions and references in `test_gates_lifecycle.py`.

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in `tests/functional/test_gates_api.py`.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from tests.e2e.client import KEY_HEADER, assert_error, uid
from tests.functional.test_gates_api import GATES, Console, country, rule


@pytest.fixture(scope="module")
def console(server: Any) -> Console:
    return Console(server.url, server.api_key)


# --- create ----------------------------------------------------------------------------------------

GATE_FIELDS = {
    "id",
    "name",
    "description",
    "idType",
    "isEnabled",
    "status",
    "type",
    "typeReason",
    "rules",
    "checksPerHour",
    "tags",
    "targetApps",
    "holdoutIDs",
    "team",
    "reviewSettings",
    "measureMetricLifts",
    "store0100Exposures",
    "owner",
    "monitoringMetrics",
    "version",
    "permalink",
    "creatorID",
    "creatorName",
    "creatorEmail",
    "createdTime",
    "lastModifierID",
    "lastModifierName",
    "lastModifierEmail",
    "lastModifiedTime",
}


def test_create_derives_id_from_name_and_fills_bookkeeping(console: Console) -> None:
    suffix = uid()
    resp = console.post(
        GATES,
        json={
            "name": f"My Gate 1 {suffix.upper()}",
            "description": "first gate",
            "rules": [rule(50, country("CA", "US"), name="north america")],
        },
    )
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert isinstance(body["message"], str) and body["message"]
    gate = body["data"]
    assert gate["id"] == f"my_gate_1_{suffix}"
    assert gate["name"] == f"My Gate 1 {suffix.upper()}"
    assert gate.keys() >= GATE_FIELDS, f"missing fields: {GATE_FIELDS - gate.keys()}"
    assert gate["description"] == "first gate"
    assert gate["isEnabled"] is True
    assert gate["status"] == "In Progress"
    assert gate["version"] == 1 and isinstance(gate["version"], int)
    assert gate["creatorName"] == "CONSOLE API"
    assert gate["lastModifierName"] == "CONSOLE API"
    owner = gate["owner"]
    assert owner["ownerType"] == "SDK_KEY"
    assert owner["ownerName"] == "CONSOLE API"
    assert owner["ownerEmail"] == ""
    assert isinstance(owner["ownerID"], str)
    assert isinstance(gate["createdTime"], int) and isinstance(gate["lastModifiedTime"], int)
    assert gate["lastModifiedTime"] >= gate["createdTime"] > 1_600_000_000_000
    assert gate["team"] is None
    assert gate["tags"] == [] and gate["targetApps"] == [] and gate["holdoutIDs"] == []
    assert gate["permalink"].endswith(gate["id"])
    [stored_rule] = gate["rules"]
    assert stored_rule["name"] == "north america"
    assert stored_rule["passPercentage"] == 50
    assert stored_rule["conditions"] == [country("CA", "US")]
    assert isinstance(stored_rule["id"], str) and stored_rule["id"]
    assert isinstance(stored_rule["baseID"], str) and stored_rule["baseID"]
    assert stored_rule["environments"] is None  # null: every environment
    # The created gate is readable and the same as the create answered.
    assert console.gate(gate["id"]) == gate


def test_parallel_creates_of_one_id_make_exactly_one_gate(console: Console) -> None:
    gate_id = f"race_{uid()}"

    def create(i: int) -> requests.Response:
        body = {"name": f"racer {i}", "id": gate_id}
        return requests.post(
            f"{console.url}{GATES}", json=body, headers={KEY_HEADER: console.key}, timeout=60
        )

    with ThreadPoolExecutor(max_workers=10) as pool:
        responses = list(pool.map(create, range(10)))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [201] + [409] * 9, [(r.status_code, r.text) for r in responses]
    winner = next(r.json()["data"] for r in responses if r.status_code == 201)
    assert console.gate(gate_id) == winner


def test_list_and_get_return_the_created_gate(console: Console) -> None:
    tag = f"t-{uid()}"
    gate = console.create_gate(tags=[tag], idType="stableID", targetApps=["web"])
    listing = console.list_gates(tags=tag)
    assert listing["data"] == [gate]
    assert isinstance(listing["message"], str)
    assert console.gate(gate["id"]) == gate


@pytest.mark.parametrize("raw", ['{"name": "broken json"', "not json at all", '{"name": "x",}'])
def test_invalid_json_body_is_400(console: Console, raw: str) -> None:
    resp = console.post(GATES, data=raw, headers={"Content-Type": "application/json"})
    body = assert_error(resp, 400)
    assert body["errors"] and body["errors"][0]["field"] == "body", body


# --- authentication and routing ----------------------------------------------------------------


def test_missing_key_is_401(console: Console) -> None:
    gate_id = f"nokey_{uid()}"
    for resp in (
        console.get(GATES, key=None),
        console.post(GATES, key=None, json={"name": "no key", "id": gate_id}),
    ):
        assert resp.status_code == 401, resp.text
        assert isinstance(resp.json()["message"], str)
    assert_error(console.get(f"{GATES}/{gate_id}"), 404)


def test_unknown_key_is_401(console: Console) -> None:
    gate = console.create_gate()
    assert_error(console.get(GATES, key="console-not-a-real-key"), 401)
    assert_error(console.get(f"{GATES}/{gate['id']}", key="console-not-a-real-key"), 401)
    resp = console.patch(f"{GATES}/{gate['id']}", key="console-not-a-real-key", json={"description": "x"})
    assert_error(resp, 401)
    assert console.gate(gate["id"]) == gate


def test_server_secret_on_a_console_route_is_403(console: Console, server: Any) -> None:
    gate_id = f"secret_{uid()}"
    assert_error(console.get(GATES, key=server.server_secret), 403)
    assert_error(
        console.post(GATES, key=server.server_secret, json={"name": "by secret", "id": gate_id}), 403
    )
    assert_error(console.get(f"{GATES}/{gate_id}"), 404)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/console/v1/gatez"),
        ("GET", "/console/v1/no_such_group"),
        ("GET", f"{GATES}/some_gate/no_such_action"),
        ("PUT", f"{GATES}/some_gate/frobnicate"),
    ],
)
def test_unknown_route_is_404(console: Console, method: str, path: str) -> None:
    resp = console.call(method, path)
    assert resp.status_code == 404, resp.text
    assert isinstance(resp.json()["message"], str)


# --- concurrency -------------------------------------------------------------------------------------


def test_parallel_patches_never_lose_an_update(console: Console) -> None:
    """20 simultaneous read-modify-writes: each one that succeeds makes its own version.

    The local server runs concurrent invocations in separate sandboxes as Lambda does, so the
    writes really race and the losers get 409s; a few rounds make sure at least one did.
    """
    conflicts = 0
    for _round in range(5):
        conflicts += _race_patches(console)
        if conflicts:
            break
    assert conflicts, "20 parallel updates never collided: the server did not run them concurrently"


def _race_patches(console: Console) -> int:
    """One round of 20 parallel PATCHes without `version` on a new gate; the number of 409s."""
    gate = console.create_gate(description="start")
    url = f"{console.url}{GATES}/{gate['id']}"

    def patch(i: int) -> tuple[int, str, requests.Response]:
        description = f"writer {i}"
        resp = requests.patch(
            url, json={"description": description}, headers={KEY_HEADER: console.key}, timeout=60
        )
        return i, description, resp

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(patch, range(20)))

    unexpected = [(r.status_code, r.text) for _, _, r in results if r.status_code not in (200, 409)]
    assert not unexpected, unexpected
    winners = [(d, r.json()["data"]["version"]) for _, d, r in results if r.status_code == 200]
    assert winners, "no update succeeded"
    for _, _, resp in results:
        if resp.status_code == 409:
            assert_error(resp, 409)
    # Every successful write produced its own version.
    assert sorted(v for _, v in winners) == list(range(2, 2 + len(winners)))
    final = console.gate(gate["id"])
    assert final["version"] == 1 + len(winners)
    assert final["description"] in {d for d, _ in winners}
    # The newest successful write is the one stored.
    assert final["description"] == max(winners, key=lambda w: w[1])[0]
    return len(results) - len(winners)


def test_parallel_patches_based_on_one_version_let_exactly_one_win(console: Console) -> None:
    gate = console.create_gate(description="start")
    url = f"{console.url}{GATES}/{gate['id']}"

    def patch(i: int) -> requests.Response:
        body = {"description": f"writer {i}", "version": gate["version"]}
        return requests.patch(url, json=body, headers={KEY_HEADER: console.key}, timeout=60)

    with ThreadPoolExecutor(max_workers=20) as pool:
        responses = list(pool.map(patch, range(20)))
    assert sorted(r.status_code for r in responses) == [200] + [409] * 19, [
        (r.status_code, r.text) for r in responses
    ]
    [winner] = [r.json()["data"] for r in responses if r.status_code == 200]
    final = console.gate(gate["id"])
    assert final["version"] == gate["version"] + 1
    assert final["description"] == winner["description"]


def test_pagination_links_keep_the_filters_and_walk_every_item_once(console: Console) -> None:
    tag = f"t-{uid()}"
    created = {console.create_gate(tags=[tag])["id"] for _ in range(5)}

    first = console.list_gates(tags=tag, limit=2)
    pagination = first["pagination"]
    assert pagination["totalItems"] == 5
    assert pagination["itemsPerPage"] == 2
    assert pagination["pageNumber"] == 1
    assert pagination["previousPage"] is None
    assert isinstance(pagination["all"], str)
    if pagination["all"]:  # the unpaginated list, filters kept
        everything = urlsplit(pagination["all"])
        assert everything.path == GATES
        assert parse_qs(everything.query).get("tags") == [tag]
        assert "page" not in parse_qs(everything.query)
    next_link = pagination["nextPage"]
    assert next_link.startswith(f"{GATES}?"), next_link  # relative: path plus query
    parts = urlsplit(next_link)
    assert parts.path == GATES
    assert parse_qs(parts.query) == {"tags": [tag], "page": ["2"], "limit": ["2"]}

    seen = [g["id"] for g in first["data"]]
    pages = [first]
    link = next_link
    while link is not None:
        resp = console.get(link)
        assert resp.status_code == 200, resp.text
        page = resp.json()
        pages.append(page)
        seen.extend(g["id"] for g in page["data"])
        link = page["pagination"]["nextPage"]
        assert len(pages) <= 5, "nextPage does not end"
    assert len(seen) == len(set(seen)) == 5
    assert set(seen) == created
    assert [len(p["data"]) for p in pages] == [2, 2, 1]
    assert [p["pagination"]["pageNumber"] for p in pages] == [1, 2, 3]
    assert all(p["pagination"]["totalItems"] == 5 for p in pages)

    last = pages[-1]["pagination"]
    assert last["nextPage"] is None
    previous = urlsplit(last["previousPage"])
    assert previous.path == GATES
    assert parse_qs(previous.query) == {"tags": [tag], "page": ["2"], "limit": ["2"]}
    back = console.get(last["previousPage"]).json()
    assert back["data"] == pages[1]["data"]


def test_list_response_is_a_json_envelope(console: Console) -> None:
    resp = console.get(GATES, params={"limit": 1})
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("application/json")
    body = json.loads(resp.text)
    assert set(body) >= {"message", "data", "pagination"}
    assert set(body["pagination"]) >= {
        "itemsPerPage",
        "pageNumber",
        "totalItems",
        "nextPage",
        "previousPage",
        "all",
    }
