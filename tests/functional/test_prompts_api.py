"""In-process tests of the prompt endpoints: create (201), read, list and pagination, PATCH of the four
patchable fields (anything else is a 400 naming it), archive and unarchive, `version` increasing on
every change, limits and auth.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_prompts.py`.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.e2e.client import assert_error, uid

PROMPTS = "/console/v1/prompts"


def create(api: Any, **fields: Any) -> dict[str, Any]:
    resp = api.post(PROMPTS, json={"name": f"prompt {uid()}", **fields})
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def read(api: Any, prompt_id: str) -> dict[str, Any]:
    resp = api.get(f"{PROMPTS}/{prompt_id}")
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def patch(api: Any, prompt_id: str, body: Any) -> requests.Response:
    return api.patch(f"{PROMPTS}/{prompt_id}", json=body)


def listed_ids(api: Any, **params: Any) -> list[str]:
    ids: list[str] = []
    resp = api.get(PROMPTS, params={"limit": 1000, **params})
    while True:
        assert resp.status_code == 200, resp.text
        body = resp.json()
        ids.extend(p["id"] for p in body["data"])
        if body["pagination"]["nextPage"] is None:
            return ids
        resp = api.get(body["pagination"]["nextPage"])


def test_create_with_every_field(api: Any) -> None:
    suffix = uid()
    body = {
        "name": f"writer.v2 {suffix}",
        "displayName": "Writer v2",
        "description": "drafts answers",
        "targetApps": ["web", "ios"],
        "team": "Growth",
        "teamID": "team_1",
        "tags": ["ai", "beta"],
        "creatorID": "user_7",
        "creatorEmail": "ada@example.com",
        "owner": {
            "ownerID": "user_7",
            "ownerType": "USER",
            "ownerName": "Ada",
            "ownerEmail": "ada@example.com",
        },
    }
    resp = api.post(PROMPTS, json=body)
    assert resp.status_code == 201, resp.text
    prompt = resp.json()["data"]
    assert prompt["id"] == f"writer.v2_{suffix}"
    for key, value in body.items():
        assert prompt[key] == value, key
    assert read(api, prompt["id"]) == prompt


def test_target_apps_may_be_one_string(api: Any) -> None:
    assert create(api, targetApps="web")["targetApps"] == ["web"]


def test_create_duplicate_name_is_409_and_keeps_the_first(api: Any) -> None:
    first = create(api, description="first")
    assert_error(api.post(PROMPTS, json={"name": first["name"], "description": "second"}), 409)
    assert read(api, first["id"]) == first


# --- limits --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "make"),
    [
        pytest.param("name", lambda: uid()[:3], id="name-3-chars"),
        pytest.param("name", lambda: (uid() * 9)[:100], id="name-100-chars"),
        pytest.param("name", lambda: f"v1.2 new_ui-{uid()}", id="name-every-allowed-character"),
        pytest.param("displayName", lambda: "abc", id="display-name-3-chars"),
        pytest.param("displayName", lambda: "d" * 100, id="display-name-100-chars"),
        pytest.param("displayName", lambda: "v1.2 new_ui-x", id="display-name-every-allowed-character"),
        pytest.param("description", lambda: "d" * 1000, id="description-1000-chars"),
        pytest.param("description", lambda: "", id="description-empty"),
    ],
)
def test_values_just_inside_the_limits_are_accepted(api: Any, field: str, make: Any) -> None:
    value = make()
    prompt = create(api, **{field: value})
    assert prompt[field] == value
    assert read(api, prompt["id"])[field] == value


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("name", "ab", id="name-2-chars"),
        pytest.param("name", "n" * 101, id="name-101-chars"),
        pytest.param("name", "a/b/c", id="name-slash"),
        pytest.param("name", "emoji 🙂", id="name-emoji"),
        pytest.param("name", 123, id="name-number"),
        pytest.param("displayName", "ab", id="display-name-2-chars"),
        pytest.param("displayName", "d" * 101, id="display-name-101-chars"),
        pytest.param("displayName", "who?", id="display-name-question-mark"),
        pytest.param("description", "d" * 1001, id="description-1001-chars"),
        pytest.param("tags", "ai", id="tags-not-array"),
        pytest.param("targetApps", 5, id="target-apps-number"),
        pytest.param("version", 3, id="version-unknown-on-create"),
    ],
)
def test_values_just_outside_the_limits_are_400_naming_the_field(api: Any, field: str, value: Any) -> None:
    body = {"name": f"prompt {uid()}", field: value}
    assert_error(api.post(PROMPTS, json=body), 400, field)


def test_name_is_required(api: Any) -> None:
    assert_error(api.post(PROMPTS, json={"description": "nameless"}), 400, "name")


def test_name_of_blanks_is_400(api: Any) -> None:
    assert_error(api.post(PROMPTS, json={"name": "   "}), 400, "name")


# --- list ----------------------------------------------------------------------------------------


def test_list_shows_created_prompts_in_pages(api: Any) -> None:
    made = [create(api)["id"] for _ in range(3)]
    resp = api.get(PROMPTS)
    assert resp.status_code == 200, resp.text
    pagination = resp.json()["pagination"]
    assert pagination["pageNumber"] == 1 and pagination["itemsPerPage"] == 100
    assert pagination["totalItems"] >= 3 and pagination["previousPage"] is None
    ids = listed_ids(api, limit=2)
    assert len(ids) == len(set(ids)), "a prompt appeared on two pages"
    assert set(made) <= set(ids)
    page = api.get(PROMPTS, params={"limit": 1, "page": 2}).json()
    assert page["pagination"]["pageNumber"] == 2 and len(page["data"]) == 1
    assert page["pagination"]["previousPage"] == f"{PROMPTS}?page=1&limit=1"


@pytest.mark.parametrize(("limit", "status"), [("1000", 200), ("1001", 400), ("0", 400)])
def test_list_limit_bounds(api: Any, limit: str, status: int) -> None:
    resp = api.get(PROMPTS, params={"limit": limit})
    if status == 200:
        assert resp.status_code == 200, resp.text
    else:
        assert_error(resp, 400, "limit")


# --- patch ---------------------------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent_and_bumps_the_version(api: Any) -> None:
    prompt = create(api, description="before", team="A", teamID="a", targetApps=["web"], tags=["t"])
    steps = [
        {"description": "after"},
        {"targetApps": ["ios", "android"]},
        {"team": "B"},
        {"teamID": "b"},
        {"targetApps": "web"},
        {"description": "d" * 1000, "team": None, "teamID": None},
    ]
    expected = dict(prompt)
    for number, change in enumerate(steps, start=2):
        resp = patch(api, prompt["id"], change)
        assert resp.status_code == 200, resp.text
        updated = resp.json()["data"]
        expected.update(change)
        if change.get("targetApps") == "web":
            expected["targetApps"] = ["web"]
        assert updated["version"] == number
        assert updated["lastModifiedTime"] >= expected["lastModifiedTime"]
        expected["version"], expected["lastModifiedTime"] = number, updated["lastModifiedTime"]
        assert updated == expected
        assert read(api, prompt["id"]) == updated
    assert expected["team"] is None and expected["tags"] == ["t"]


@pytest.mark.parametrize(
    "field",
    [
        "name",
        "displayName",
        "tags",
        "idType",
        "id",
        "version",
        "owner",
        "creatorID",
        "holdoutIDs",
        "isArchived",
    ],
)
def test_patch_of_any_other_field_is_400_naming_it(api: Any, field: str) -> None:
    prompt = create(api)
    body = {"description": "would change", field: prompt.get(field, "x")}
    assert_error(patch(api, prompt["id"], body), 400, field)
    assert read(api, prompt["id"]) == prompt


def test_patch_naming_several_other_fields_names_each(api: Any) -> None:
    prompt = create(api)
    err = assert_error(patch(api, prompt["id"], {"name": "new name", "tags": ["x"]}), 400)
    assert {e["field"] for e in err["errors"]} == {"name", "tags"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"description": "d" * 1001}, "description"),
        ({"description": None}, "description"),
        ({"description": 5}, "description"),
        ({"targetApps": None}, "targetApps"),
        ({"team": 7}, "team"),
    ],
)
def test_patch_with_bad_values_is_400_naming_the_field(api: Any, body: dict[str, Any], field: str) -> None:
    prompt = create(api)
    assert_error(patch(api, prompt["id"], body), 400, field)
    assert read(api, prompt["id"]) == prompt


def test_patch_that_is_not_an_object_is_400(api: Any) -> None:
    prompt = create(api)
    assert_error(patch(api, prompt["id"], ["description"]), 400)
    assert read(api, prompt["id"]) == prompt


def test_empty_patch_changes_nothing(api: Any) -> None:
    prompt = create(api)
    resp = patch(api, prompt["id"], {})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == prompt


def test_patch_unknown_prompt_is_404(api: Any) -> None:
    assert_error(patch(api, f"nope_{uid()}", {"description": "x"}), 404)


# --- archive -------------------------------------------------------------------------------------


def test_archive_and_unarchive_bump_the_version(api: Any) -> None:
    prompt = create(api)
    resp = api.put(f"{PROMPTS}/{prompt['id']}/archive", json={"archiveReason": "retired"})
    assert resp.status_code == 200, resp.text
    archived = resp.json()["data"]
    assert archived["isArchived"] is True and archived["version"] == 2
    assert archived["lastModifiedTime"] >= prompt["lastModifiedTime"]
    assert read(api, prompt["id"]) == archived
    assert prompt["id"] not in listed_ids(api)
    assert prompt["id"] in listed_ids(api, includeArchived="true")
    assert_error(patch(api, prompt["id"], {"description": "x"}), 400)
    assert_error(api.put(f"{PROMPTS}/{prompt['id']}/archive"), 400)
    resp = api.put(f"{PROMPTS}/{prompt['id']}/unarchive")
    assert resp.status_code == 200, resp.text
    restored = resp.json()["data"]
    assert restored["isArchived"] is False and restored["version"] == 3
    assert prompt["id"] in listed_ids(api)
    assert_error(api.put(f"{PROMPTS}/{prompt['id']}/unarchive"), 400)
    resp = patch(api, prompt["id"], {"description": "alive again"})
    assert resp.status_code == 200 and resp.json()["data"]["version"] == 4


@pytest.mark.parametrize("action", ["archive", "unarchive"])
def test_archive_actions_on_unknown_prompt_are_404(api: Any, action: str) -> None:
    assert_error(api.put(f"{PROMPTS}/nope_{uid()}/{action}"), 404)
