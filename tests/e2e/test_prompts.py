"""End-to-end tests of the prompt endpoints over HTTP against the local server: create (201),
read, list and pagination, PATCH of the four patchable fields (anything else is a 400 naming
it), archive and unarchive, `version` increasing on every change, limits and auth.

The server is shared by the whole session: every test makes its own prompts (unique names).

Only what needs the server stays here (a happy path, an error, keys, concurrency, the workflows);
the validation, edge and list cases run in process in `tests/functional/test_prompts_api.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.e2e.client import assert_error
from tests.functional.test_prompts_api import PROMPTS, read, uid

# The contract's Prompt resource.
PROMPT_FIELDS = {
    "id",
    "name",
    "description",
    "idType",
    "creatorID",
    "creatorName",
    "creatorEmail",
    "createdTime",
    "lastModifierID",
    "lastModifierName",
    "lastModifierEmail",
    "lastModifiedTime",
    "tags",
    "targetApps",
    "holdoutIDs",
    "team",
    "teamID",
    "version",
}


# --- create and read ---------------------------------------------------------------------------


def test_create_answers_201_with_the_contract_fields(api: Any) -> None:
    suffix = uid()
    resp = api.post(PROMPTS, json={"name": f"Support Bot {suffix}"})
    assert resp.status_code == 201, resp.text
    assert isinstance(resp.json()["message"], str) and resp.json()["message"]
    prompt = resp.json()["data"]
    assert prompt.keys() >= PROMPT_FIELDS, f"missing: {PROMPT_FIELDS - prompt.keys()}"
    assert prompt["id"] == f"support_bot_{suffix}"
    assert prompt["name"] == prompt["displayName"] == f"Support Bot {suffix}"
    assert prompt["description"] == ""
    assert prompt["idType"] == "userID"
    assert prompt["version"] == 1 and isinstance(prompt["version"], int)
    assert prompt["creatorName"] == prompt["lastModifierName"] == "CONSOLE API"
    assert prompt["creatorID"] == prompt["lastModifierID"] and prompt["creatorID"]
    assert prompt["creatorEmail"] is None and prompt["lastModifierEmail"] is None
    assert prompt["createdTime"] == prompt["lastModifiedTime"] > 1_600_000_000_000
    assert prompt["tags"] == [] and prompt["targetApps"] == [] and prompt["holdoutIDs"] == []
    assert prompt["team"] is None and prompt["teamID"] is None
    assert prompt["owner"]["ownerType"] == "SDK_KEY" and prompt["owner"]["ownerName"] == "CONSOLE API"
    assert prompt["isArchived"] is False
    assert read(api, prompt["id"]) == prompt


def test_get_unknown_prompt_is_404(api: Any) -> None:
    assert_error(api.get(f"{PROMPTS}/nope_{uid()}"), 404)


# --- auth ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path"), [("GET", PROMPTS), ("POST", PROMPTS), ("PATCH", f"{PROMPTS}/x")])
def test_missing_or_unknown_key_is_401_and_a_server_secret_403(server: Any, method: str, path: str) -> None:
    url = server.url + path
    resp = requests.request(method, url, json={"name": "no key"}, timeout=30)
    assert resp.status_code == 401, resp.text
    for key, status in (("console-not-a-real-key", 401), (server.server_secret, 403)):
        resp = requests.request(
            method, url, json={"name": "bad key"}, headers={"SERVICE-API-KEY": key}, timeout=30
        )
        assert_error(resp, status)
