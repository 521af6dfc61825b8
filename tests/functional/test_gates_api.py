"""In-process tests of the gate endpoints: create, read, update, delete, errors, auth, derived type,
list filters, pagination and concurrent updates.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_gates.py`.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e.client import ApiClient, assert_error, country, error_for, rule, uid

GATES = "/console/v1/gates"


class Console(ApiClient):
    """The console client with helpers for this file's resources."""

    def create_gate(self, **fields: Any) -> dict[str, Any]:
        suffix = uid()
        body = {"name": f"gate {suffix}", "id": f"gate_{suffix}", **fields}
        resp = self.post(GATES, json=body)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    def gate(self, gate_id: str) -> dict[str, Any]:
        resp = self.get(f"{GATES}/{gate_id}")
        assert resp.status_code == 200, resp.text
        return resp.json()["data"]

    def list_gates(self, **params: Any) -> dict[str, Any]:
        resp = self.get(GATES, params=params)
        assert resp.status_code == 200, resp.text
        return resp.json()


@pytest.fixture(scope="module")
def console(app_api: ApiClient, app_ingest: ApiClient) -> Console:
    return Console(app_api.url, app_api.key, transport=app_api.transport)


def ids_of(listing: dict[str, Any]) -> set[str]:
    return {g["id"] for g in listing["data"]}


def test_create_with_explicit_id_keeps_it(console: Console) -> None:
    gate_id = f"Explicit-id.{uid()}"
    gate = console.create_gate(id=gate_id, name="A name unlike the id")
    assert gate["id"] == gate_id
    assert gate["name"] == "A name unlike the id"
    assert console.gate(gate_id)["id"] == gate_id


def test_create_duplicate_id_is_409_and_keeps_the_first(console: Console) -> None:
    first = console.create_gate(description="the first one")
    resp = console.post(GATES, json={"name": "another name", "id": first["id"], "description": "second"})
    assert_error(resp, 409)
    assert console.gate(first["id"]) == first


def test_create_duplicate_derived_id_is_409(console: Console) -> None:
    name = f"Same Name {uid()}"
    assert console.post(GATES, json={"name": name}).status_code == 201
    assert_error(console.post(GATES, json={"name": name}), 409)


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"name": "abc"}, id="name-3-chars"),
        pytest.param({"name": "n" * 100}, id="name-100-chars"),
        pytest.param({"name": "v1.2 rollout_new-ui"}, id="name-all-allowed-characters"),
        pytest.param({"description": "d" * 1000}, id="description-1000-chars"),
        pytest.param({"rules": [rule(0), rule(100), rule(99.99), rule(0.01)]}, id="pass-percentage-bounds"),
    ],
)
def test_values_at_the_limits_are_accepted(console: Console, fields: dict[str, Any]) -> None:
    gate = console.create_gate(**fields)
    for key, value in fields.items():
        if key == "rules":
            assert [r["passPercentage"] for r in gate["rules"]] == [r["passPercentage"] for r in value]
        else:
            assert gate[key] == value


def test_name_with_a_period_derives_the_id(console: Console) -> None:
    suffix = uid()
    resp = console.post(GATES, json={"name": f"Checkout V2.1 {suffix}"})
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["id"] == f"checkout_v2.1_{suffix}"


def test_integers_stay_integers_in_the_json_text(console: Console) -> None:
    suffix = uid()
    resp = console.post(
        GATES,
        json={"name": f"ints {suffix}", "id": f"ints_{suffix}", "rules": [rule(50, country()), rule(12.5)]},
    )
    assert resp.status_code == 201, resp.text
    for text in (resp.text, console.get(f"{GATES}/ints_{suffix}").text):
        assert re.search(r'"passPercentage":\s*50[,}\s]', text), text
        assert not re.search(r'"passPercentage":\s*50\.0', text), text
        assert re.search(r'"passPercentage":\s*12\.5[,}\s]', text), text
        assert re.search(r'"version":\s*1[,}\s]', text), text
        assert re.search(r'"createdTime":\s*\d+[,}\s]', text), text


def test_get_unknown_gate_is_404(console: Console) -> None:
    assert_error(console.get(f"{GATES}/no_such_gate_{uid()}"), 404)


# --- full update (POST /gates/{id}) ------------------------------------------------------------


def test_full_update_requires_is_enabled_description_and_rules(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    resp = console.post(f"{GATES}/{gate['id']}", json={"name": "renamed gate"})
    for field in ("isEnabled", "description", "rules"):
        assert_error(resp, 400, field)
    resp = console.post(f"{GATES}/{gate['id']}", json={"isEnabled": True, "rules": []})
    body = assert_error(resp, 400, "description")
    assert {e["field"] for e in body["errors"]} == {"description"}
    assert console.gate(gate["id"]) == gate


def test_full_update_disabling_sets_status_and_bumps_version(console: Console) -> None:
    gate = console.create_gate(description="before", rules=[rule(50, country())], tags=["keep"])
    resp = console.post(
        f"{GATES}/{gate['id']}",
        json={"isEnabled": False, "description": "after", "rules": [rule(25, country("FR"), name="fr")]},
    )
    assert resp.status_code == 200, resp.text
    updated = resp.json()["data"]
    assert updated["isEnabled"] is False
    assert updated["status"] == "Disabled"
    assert updated["description"] == "after"
    assert [(r["name"], r["passPercentage"]) for r in updated["rules"]] == [("fr", 25)]
    assert updated["version"] == gate["version"] + 1
    assert updated["lastModifiedTime"] >= gate["lastModifiedTime"]
    assert updated["createdTime"] == gate["createdTime"]
    assert updated["tags"] == ["keep"]  # not part of the body: unchanged
    assert console.gate(gate["id"]) == updated


def test_full_update_of_unknown_gate_is_404(console: Console) -> None:
    resp = console.post(f"{GATES}/missing_{uid()}", json={"isEnabled": True, "description": "", "rules": []})
    assert_error(resp, 404)


# --- partial update (PATCH /gates/{id}) --------------------------------------------------------


def test_patch_changes_only_the_fields_sent(console: Console) -> None:
    gate = console.create_gate(
        description="original", tags=["a", "b"], rules=[rule(50, country())], idType="stableID"
    )
    resp = console.patch(f"{GATES}/{gate['id']}", json={"description": "patched"})
    assert resp.status_code == 200, resp.text
    patched = resp.json()["data"]
    assert patched["description"] == "patched"
    assert patched["version"] == gate["version"] + 1
    assert patched["lastModifiedTime"] >= gate["lastModifiedTime"]
    untouched = {"name", "tags", "rules", "idType", "isEnabled", "status", "owner", "createdTime"}
    assert {k: patched[k] for k in untouched} == {k: gate[k] for k in untouched}
    assert console.gate(gate["id"]) == patched


def test_patch_with_current_version_succeeds(console: Console) -> None:
    gate = console.create_gate()
    resp = console.patch(f"{GATES}/{gate['id']}", json={"description": "locked", "version": 1})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["version"] == 2


def test_patch_with_stale_version_is_409_and_changes_nothing(console: Console) -> None:
    gate = console.create_gate(description="v1")
    assert console.patch(f"{GATES}/{gate['id']}", json={"description": "v2"}).status_code == 200
    before = console.gate(gate["id"])
    resp = console.patch(f"{GATES}/{gate['id']}", json={"description": "lost update", "version": 1})
    assert_error(resp, 409)
    assert console.gate(gate["id"]) == before
    full = {"isEnabled": False, "description": "lost update", "rules": [], "version": 1}
    assert_error(console.post(f"{GATES}/{gate['id']}", json=full), 409)
    assert console.gate(gate["id"]) == before


def test_an_unknown_field_is_400_naming_the_field_meant_and_changes_nothing(console: Console) -> None:
    gate = console.create_gate(isEnabled=False)
    body = assert_error(console.patch(f"{GATES}/{gate['id']}", json={"enabled": True}), 400, "enabled")
    assert (
        body["message"] == "Invalid request: enabled: is not a field of this request; did you mean isEnabled?"
    )
    assert console.gate(gate["id"]) == gate
    nested = {"name": f"typo {uid()}", "rules": [{**rule(10), "condtions": []}]}
    body = assert_error(console.post(GATES, json=nested), 400, "rules[0].condtions")
    assert error_for(body, "rules[0].condtions") == "is not a field of this request; did you mean conditions?"


def test_patch_unknown_gate_is_404(console: Console) -> None:
    assert_error(console.patch(f"{GATES}/missing_{uid()}", json={"description": "x"}), 404)


# --- delete ----------------------------------------------------------------------------------------


def test_delete_removes_the_gate(console: Console) -> None:
    tag = f"t-{uid()}"
    gate = console.create_gate(tags=[tag])
    resp = console.delete(f"{GATES}/{gate['id']}")
    assert resp.status_code == 200, resp.text
    assert isinstance(resp.json()["message"], str)
    assert_error(console.get(f"{GATES}/{gate['id']}"), 404)
    assert console.list_gates(tags=tag, includeArchived="true")["data"] == []
    assert_error(console.delete(f"{GATES}/{gate['id']}"), 404)


def test_a_deleted_id_can_be_created_again_with_a_fresh_history(console: Console) -> None:
    gate = console.create_gate(description="first life")
    path = f"{GATES}/{gate['id']}"
    assert console.patch(path, json={"description": "changed"}).status_code == 200
    assert console.delete(path).status_code == 200
    resp = console.post(GATES, json={"name": "second life", "id": gate["id"]})
    assert resp.status_code == 201, resp.text
    reborn = resp.json()["data"]
    assert reborn["version"] == 1
    assert reborn["description"] == ""
    versions = console.get(f"{path}/versions").json()
    assert [v["version"] for v in versions["data"]] == [1]
    assert versions["data"][0]["name"] == "second life"


# --- validation errors -----------------------------------------------------------------------------

T0 = "rules[0].conditions[0].targetValue"

BAD_CREATES = [
    pytest.param({"name": "ab"}, "name", id="name-too-short"),
    pytest.param({"name": "x" * 101}, "name", id="name-too-long"),
    pytest.param({"name": "bad/name!"}, "name", id="name-bad-characters"),
    pytest.param({"description": "d" * 1001}, "description", id="description-too-long"),
    pytest.param({"rules": [rule(101)]}, "rules[0].passPercentage", id="pass-percentage-101"),
    pytest.param({"rules": [rule(-1)]}, "rules[0].passPercentage", id="pass-percentage-negative"),
    pytest.param({"rules": [rule(50.123)]}, "rules[0].passPercentage", id="pass-percentage-3-decimals"),
    pytest.param(
        {"rules": [rule(50, {"type": "planet", "operator": "any", "targetValue": ["mars"]})]},
        "rules[0].conditions[0].type",
        id="unknown-condition-type",
    ),
    pytest.param(
        {"rules": [rule(50, {"type": "app_version", "operator": "version_gt", "targetValue": ["1.2"]})]},
        T0,
        id="version-operator-with-list",
    ),
    pytest.param(
        {
            "rules": [
                rule(50, {"type": "custom_field", "field": "age", "operator": "gt", "targetValue": "18"})
            ]
        },
        T0,
        id="gt-with-string",
    ),
    pytest.param(
        {"rules": [rule(50, {"type": "country", "operator": "any", "targetValue": "CA"})]},
        T0,
        id="list-operator-with-string",
    ),
    pytest.param(
        {"rules": [rule(50, {"type": "email", "operator": "str_matches", "targetValue": "([a-z"})]},
        T0,
        id="invalid-regex",
    ),
    pytest.param(
        {"rules": [rule(50, {"type": "passes_gate", "targetValue": "no_such_gate_anywhere"})]},
        T0,
        id="passes-gate-missing-gate",
    ),
    pytest.param(
        {"rules": [rule(100), rule(50, {"type": "fails_gate", "targetValue": "no_such_gate_anywhere"})]},
        "rules[1].conditions[0].targetValue",
        id="fails-gate-missing-gate-second-rule",
    ),
    pytest.param({"colour": "blue"}, "colour", id="unknown-field"),
    pytest.param({"rules": [{**rule(50), "colour": "red"}]}, "rules[0].colour", id="unknown-rule-field"),
    pytest.param(
        {"rules": [rule(50, {**country(), "colour": "red"})]},
        "rules[0].conditions[0].colour",
        id="unknown-condition-field",
    ),
    pytest.param(
        {"rules": [rule(50, {"type": "country", "targetValue": ["CA"]})]},
        "rules[0].conditions[0].operator",
        id="missing-operator",
    ),
    pytest.param(
        {"rules": [rule(50, {"type": "country", "operator": "between", "targetValue": ["CA"]})]},
        "rules[0].conditions[0].operator",
        id="unknown-operator",
    ),
    pytest.param({"rules": [{"name": "r", "conditions": []}]}, "rules[0].passPercentage", id="no-percentage"),
    pytest.param({"isEnabled": "true"}, "isEnabled", id="is-enabled-string"),
    pytest.param({"name": 12345}, "name", id="name-number"),
    pytest.param({"rules": [rule("50")]}, "rules[0].passPercentage", id="pass-percentage-string"),
    pytest.param({"tags": "web"}, "tags", id="tags-not-a-list"),
    pytest.param({"type": "STALE"}, "type", id="type-not-writable"),
    pytest.param({"releasePipelineID": "no_such_pipeline"}, "releasePipelineID", id="unknown-pipeline"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_CREATES)
def test_create_with_bad_input_is_400_naming_the_field(
    console: Console, fields: dict[str, Any], field: str
) -> None:
    gate_id = f"bad_{uid()}"
    resp = console.post(GATES, json={"name": "valid name", "id": gate_id, **fields})
    assert_error(resp, 400, field)
    assert_error(console.get(f"{GATES}/{gate_id}"), 404)  # nothing was stored


def test_passes_gate_naming_an_existing_gate_is_accepted(console: Console) -> None:
    target = console.create_gate()
    gate = console.create_gate(rules=[rule(100, {"type": "passes_gate", "targetValue": target["id"]})])
    assert gate["rules"][0]["conditions"] == [{"type": "passes_gate", "targetValue": target["id"]}]


def test_create_passes_gate_naming_itself_is_400(console: Console) -> None:
    gate_id = f"self_{uid()}"
    resp = console.post(
        GATES,
        json={
            "name": "self ref",
            "id": gate_id,
            "rules": [rule(50, {"type": "passes_gate", "targetValue": gate_id})],
        },
    )
    assert_error(resp, 400, T0)


def test_patch_passes_gate_naming_the_gate_itself_is_400_and_changes_nothing(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    resp = console.patch(
        f"{GATES}/{gate['id']}",
        json={"rules": [rule(50, {"type": "passes_gate", "targetValue": gate["id"]})]},
    )
    assert_error(resp, 400, T0)
    assert console.gate(gate["id"]) == gate


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"rules": [rule(101)]}, "rules[0].passPercentage", id="pass-percentage"),
        pytest.param({"description": "d" * 1001}, "description", id="description"),
        pytest.param({"name": "no!"}, "name", id="name"),
        pytest.param({"isEnabled": "false"}, "isEnabled", id="is-enabled-string"),
        pytest.param({"isEnabled": None}, "isEnabled", id="is-enabled-null"),
        pytest.param({"colour": "blue"}, "colour", id="unknown-field"),
    ],
)
def test_failed_patch_leaves_the_gate_unchanged(console: Console, fields: dict[str, Any], field: str) -> None:
    gate = console.create_gate(description="stable", rules=[rule(50, country())])
    before = console.gate(gate["id"])
    assert_error(console.patch(f"{GATES}/{gate['id']}", json=fields), 400, field)
    assert console.gate(gate["id"]) == before


def test_failed_full_update_leaves_the_gate_unchanged(console: Console) -> None:
    gate = console.create_gate(description="stable", rules=[rule(50, country())])
    resp = console.post(
        f"{GATES}/{gate['id']}",
        json={
            "isEnabled": False,
            "description": "changed",
            "rules": [rule(50, {"type": "app_version", "operator": "version_lte", "targetValue": 3})],
        },
    )
    assert_error(resp, 400, T0)
    assert console.gate(gate["id"]) == gate


def test_patch_version_must_be_an_integer(console: Console) -> None:
    gate = console.create_gate()
    assert_error(
        console.patch(f"{GATES}/{gate['id']}", json={"description": "x", "version": "1"}), 400, "version"
    )
    assert console.gate(gate["id"]) == gate


def test_gate_conditions_cannot_form_a_cycle(console: Console) -> None:
    first = console.create_gate(rules=[rule(50, country())])
    second = console.create_gate(rules=[rule(100, {"type": "passes_gate", "targetValue": first["id"]})])
    before = console.gate(first["id"])
    resp = console.patch(
        f"{GATES}/{first['id']}",
        json={"rules": [rule(100, {"type": "fails_gate", "targetValue": second["id"]})]},
    )
    assert_error(resp, 400)
    assert console.gate(first["id"]) == before


def test_body_that_is_not_an_object_is_400(console: Console) -> None:
    assert_error(console.post(GATES, json=["name", "a list"]), 400)


# --- derived type and typeReason ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        pytest.param({"rules": []}, ("STALE", "STALE_NO_RULES"), id="no-rules"),
        pytest.param({"rules": [rule(100)]}, ("STALE", "STALE_ALL_TRUE"), id="everyone-100"),
        pytest.param(
            {"rules": [rule(0, country()), rule(0)]}, ("STALE", "STALE_ALL_FALSE"), id="all-rules-0"
        ),
        pytest.param({"rules": [rule(50, country())]}, ("TEMPORARY", "NONE"), id="one-50-rule"),
        pytest.param({"rules": [rule(50)]}, ("TEMPORARY", "NONE"), id="everyone-50"),
        pytest.param({"rules": [rule(100, country())]}, ("TEMPORARY", "NONE"), id="conditioned-100"),
        pytest.param(
            {"rules": [rule(0, country()), rule(100)]}, ("TEMPORARY", "NONE"), id="some-excluded-rest-pass"
        ),
        pytest.param({"type": "PERMANENT"}, ("PERMANENT", "NONE"), id="permanent-no-rules"),
        pytest.param({"type": "PERMANENT", "rules": [rule(100)]}, ("PERMANENT", "NONE"), id="permanent-100"),
        pytest.param(
            {"type": "PERMANENT", "rules": [rule(0)], "isEnabled": False},
            ("PERMANENT", "NONE"),
            id="permanent-disabled",
        ),
        pytest.param(
            {"isEnabled": False, "rules": [rule(50, country())]},
            ("STALE", "STALE_PROBABLY_UNLAUNCHED"),
            id="disabled",
        ),
    ],
)
def test_type_and_reason_are_derived_from_the_configuration(
    console: Console, fields: dict[str, Any], expected: tuple[str, str]
) -> None:
    gate = console.create_gate(**fields)
    assert (gate["type"], gate["typeReason"]) == expected
    again = console.gate(gate["id"])
    assert (again["type"], again["typeReason"]) == expected


def test_launched_gate_is_stale_probably_launched(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    resp = console.put(f"{GATES}/{gate['id']}/launch")
    assert resp.status_code == 200, resp.text
    launched = resp.json()["data"]
    assert (launched["type"], launched["typeReason"]) == ("STALE", "STALE_PROBABLY_LAUNCHED")
    assert console.gate(gate["id"])["typeReason"] == "STALE_PROBABLY_LAUNCHED"


def test_type_follows_the_rules_through_updates(console: Console) -> None:
    gate = console.create_gate(rules=[rule(50, country())])
    assert (gate["type"], gate["typeReason"]) == ("TEMPORARY", "NONE")
    path = f"{GATES}/{gate['id']}"
    steps = [
        ({"rules": [rule(100)]}, ("STALE", "STALE_ALL_TRUE")),
        ({"rules": [rule(0)]}, ("STALE", "STALE_ALL_FALSE")),
        ({"rules": []}, ("STALE", "STALE_NO_RULES")),
        ({"type": "PERMANENT"}, ("PERMANENT", "NONE")),
        ({"type": "TEMPORARY", "rules": [rule(30)]}, ("TEMPORARY", "NONE")),
        ({"isEnabled": False}, ("STALE", "STALE_PROBABLY_UNLAUNCHED")),
    ]
    for body, expected in steps:
        resp = console.patch(path, json=body)
        assert resp.status_code == 200, resp.text
        data = resp.json()["data"]
        assert (data["type"], data["typeReason"]) == expected, body


def test_only_rules_up_to_the_first_everyone_rule_count(console: Console) -> None:
    # Rules are evaluated in order: a 0% rule after an everyone-at-100% rule can never apply.
    gate = console.create_gate(rules=[rule(100), rule(0, country())])
    assert (gate["type"], gate["typeReason"]) == ("STALE", "STALE_ALL_TRUE")


STAGING_ONLY_EVERYONE = {**rule(100), "environments": ["staging"]}


def test_everyone_rule_limited_to_one_environment_is_not_all_true(console: Console) -> None:
    # A rule applies only in its environments (null: all). Outside staging no rule applies and
    # the gate fails, so not everyone passes.
    gate = console.create_gate(rules=[STAGING_ONLY_EVERYONE])
    assert (gate["type"], gate["typeReason"]) != ("STALE", "STALE_ALL_TRUE"), gate


def test_everyone_rule_limited_to_one_environment_does_not_pass_everyone(console: Console) -> None:
    tag = f"t-{uid()}"
    gate = console.create_gate(tags=[tag], rules=[STAGING_ONLY_EVERYONE])
    assert gate["id"] not in ids_of(console.list_gates(tags=tag, passRate="100"))


def test_template_gate_has_type_template(console: Console) -> None:
    tag = f"t-{uid()}"
    template = console.create_gate(tags=[tag], isTemplate=True, rules=[rule(50, country())])
    console.create_gate(tags=[tag], rules=[rule(50, country())])
    assert template["type"] == "TEMPLATE"
    assert ids_of(console.list_gates(tags=tag, type="TEMPLATE")) == {template["id"]}


# --- list filters ------------------------------------------------------------------------------------


def test_filter_id_type(console: Console) -> None:
    tag = f"t-{uid()}"
    stable = console.create_gate(tags=[tag], idType="stableID")
    user = console.create_gate(tags=[tag], idType="userID")
    assert ids_of(console.list_gates(tags=tag, idType="stableID")) == {stable["id"]}
    assert ids_of(console.list_gates(tags=tag, idType="userID")) == {user["id"]}
    assert ids_of(console.list_gates(tags=tag, idType="companyID")) == set()


def test_filters_with_several_values_match_any_of_them(console: Console) -> None:
    tag = f"t-{uid()}"
    stable = console.create_gate(tags=[tag], idType="stableID", rules=[rule(100)])
    user = console.create_gate(tags=[tag], idType="userID", rules=[rule(0)])
    company = console.create_gate(tags=[tag], idType="companyID", rules=[rule(50, country())])
    for query in (f"idType=stableID&idType=userID&tags={tag}", f"idType=stableID,userID&tags={tag}"):
        assert ids_of(console.get(f"{GATES}?{query}").json()) == {stable["id"], user["id"]}, query
    for query in (f"passRate=0&passRate=INBETWEEN&tags={tag}", f"passRate=0,INBETWEEN&tags={tag}"):
        assert ids_of(console.get(f"{GATES}?{query}").json()) == {user["id"], company["id"]}, query


def test_filter_type_and_type_reason(console: Console) -> None:
    tag = f"t-{uid()}"
    temporary = console.create_gate(tags=[tag], rules=[rule(50, country())])
    permanent = console.create_gate(tags=[tag], type="PERMANENT", rules=[rule(50, country())])
    no_rules = console.create_gate(tags=[tag])
    all_true = console.create_gate(tags=[tag], rules=[rule(100)])
    disabled = console.create_gate(tags=[tag], rules=[rule(50, country())], isEnabled=False)
    assert ids_of(console.list_gates(tags=tag, type="TEMPORARY")) == {temporary["id"]}
    assert ids_of(console.list_gates(tags=tag, type="PERMANENT")) == {permanent["id"]}
    assert ids_of(console.list_gates(tags=tag, type="STALE")) == {
        no_rules["id"],
        all_true["id"],
        disabled["id"],
    }
    assert ids_of(console.list_gates(tags=tag, type="TEMPLATE")) == set()
    assert ids_of(console.list_gates(tags=tag, typeReason="NONE")) == {temporary["id"], permanent["id"]}
    assert ids_of(console.list_gates(tags=tag, typeReason="STALE_NO_RULES")) == {no_rules["id"]}
    assert ids_of(console.list_gates(tags=tag, typeReason="STALE_ALL_TRUE")) == {all_true["id"]}
    assert ids_of(console.list_gates(tags=tag, typeReason="STALE_PROBABLY_UNLAUNCHED")) == {disabled["id"]}
    assert ids_of(console.list_gates(tags=tag, typeReason="STALE_ALL_FALSE")) == set()
    both = console.list_gates(tags=tag, type="STALE", typeReason="STALE_ALL_TRUE")
    assert ids_of(both) == {all_true["id"]}


def test_filter_pass_rate(console: Console) -> None:
    tag = f"t-{uid()}"
    half = console.create_gate(tags=[tag], rules=[rule(50, country())])
    everyone = console.create_gate(tags=[tag], rules=[rule(100)])
    nobody = console.create_gate(tags=[tag], rules=[rule(0, country()), rule(0)])
    no_rules = console.create_gate(tags=[tag])  # no rule matches anyone: always false
    disabled = console.create_gate(tags=[tag], rules=[rule(100)], isEnabled=False)  # off: always false
    launched = console.create_gate(tags=[tag], rules=[rule(0)])
    some_excluded = console.create_gate(tags=[tag], rules=[rule(0, country()), rule(100)])
    assert console.put(f"{GATES}/{launched['id']}/launch").status_code == 200  # launched: always true
    assert ids_of(console.list_gates(tags=tag, passRate="INBETWEEN")) == {half["id"], some_excluded["id"]}
    assert ids_of(console.list_gates(tags=tag, passRate="100")) == {everyone["id"], launched["id"]}
    assert ids_of(console.list_gates(tags=tag, passRate="0")) == {
        nobody["id"],
        no_rules["id"],
        disabled["id"],
    }


def test_filter_rollout_rate(console: Console) -> None:
    tag = f"t-{uid()}"
    all_zero = console.create_gate(tags=[tag], rules=[rule(0, country()), rule(0)])
    all_hundred = console.create_gate(tags=[tag], rules=[rule(100, country()), rule(100)])
    some_between = console.create_gate(tags=[tag], rules=[rule(100), rule(30, country())])
    hundred_no_everyone = console.create_gate(tags=[tag], rules=[rule(100, country())])
    console.create_gate(tags=[tag], rules=[rule(100, country()), rule(0)])  # none of the three
    assert ids_of(console.list_gates(tags=tag, rolloutRate="0")) == {all_zero["id"]}
    assert ids_of(console.list_gates(tags=tag, rolloutRate="100")) == {all_hundred["id"]}
    assert ids_of(console.list_gates(tags=tag, rolloutRate="INBETWEEN")) == {some_between["id"]}
    assert hundred_no_everyone["id"] not in ids_of(console.list_gates(tags=tag, rolloutRate="100"))
    # Rollout rate describes the rules as configured, pass rate what the gate returns: the
    # 30% rule sits behind an everyone-at-100% rule, so everyone passes.
    assert ids_of(console.list_gates(tags=tag, passRate="100")) >= {some_between["id"]}


def test_filter_release_pipeline_with_an_unknown_id_matches_nothing(console: Console) -> None:
    console.create_gate()
    listing = console.list_gates(releasePipelineID=f"pipeline_{uid()}")
    assert listing["data"] == []
    assert listing["pagination"]["totalItems"] == 0


def test_filter_team_id(console: Console) -> None:
    tag, team = f"t-{uid()}", f"team_{uid()}"
    in_team = console.create_gate(tags=[tag], team="Growth", teamID=team)
    console.create_gate(tags=[tag])
    console.create_gate(tags=[tag], teamID=f"team_{uid()}")
    assert ids_of(console.list_gates(tags=tag, teamID=team)) == {in_team["id"]}
    assert ids_of(console.list_gates(teamID=team)) == {in_team["id"]}


def test_filter_target_app(console: Console) -> None:
    tag, app = f"t-{uid()}", f"app_{uid()}"
    one = console.create_gate(tags=[tag], targetApps=[app])
    two = console.create_gate(tags=[tag], targetApps=["other", app])
    console.create_gate(tags=[tag], targetApps=["other"])
    console.create_gate(tags=[tag])
    assert ids_of(console.list_gates(tags=tag, targetAppID=app)) == {one["id"], two["id"]}
    assert ids_of(console.list_gates(targetAppID=app)) == {one["id"], two["id"]}


def test_filter_store_0100_exposures(console: Console) -> None:
    tag = f"t-{uid()}"
    stores = console.create_gate(tags=[tag], store0100Exposures=True)
    default = console.create_gate(tags=[tag])
    assert stores["store0100Exposures"] is True
    assert default["store0100Exposures"] is False
    assert ids_of(console.list_gates(tags=tag, store0100Exposures="true")) == {stores["id"]}
    assert ids_of(console.list_gates(tags=tag, store0100Exposures="false")) == {default["id"]}
    assert ids_of(console.list_gates(tags=tag)) == {stores["id"], default["id"]}


def test_filter_creator_name(console: Console) -> None:
    tag = f"t-{uid()}"
    gate = console.create_gate(tags=[tag])
    assert ids_of(console.list_gates(tags=tag, creatorName="CONSOLE API")) == {gate["id"]}
    assert ids_of(console.list_gates(tags=tag, creatorName="Someone Else")) == set()


def test_filter_creator_id(console: Console) -> None:
    tag, creator = f"t-{uid()}", f"user_{uid()}"
    mine = console.create_gate(tags=[tag], creatorID=creator)
    other = console.create_gate(tags=[tag])
    assert mine["creatorID"] == creator
    assert ids_of(console.list_gates(tags=tag, creatorID=creator)) == {mine["id"]}
    assert ids_of(console.list_gates(creatorID=creator)) == {mine["id"]}
    assert ids_of(console.list_gates(tags=tag, creatorID=other["creatorID"])) == {other["id"]}


def test_filter_tags(console: Console) -> None:
    first, second = f"t-{uid()}", f"t-{uid()}"
    both = console.create_gate(tags=[first, second])
    only_second = console.create_gate(tags=[second, "unrelated"])
    assert ids_of(console.list_gates(tags=first)) == {both["id"]}
    assert ids_of(console.list_gates(tags=second)) == {both["id"], only_second["id"]}
    assert ids_of(console.list_gates(tags=f"t-{uid()}")) == set()


def test_filters_combine(console: Console) -> None:
    tag = f"t-{uid()}"
    match = console.create_gate(
        tags=[tag], idType="stableID", rules=[rule(50, country())], store0100Exposures=True
    )
    console.create_gate(tags=[tag], idType="stableID", rules=[rule(100)], store0100Exposures=True)
    console.create_gate(tags=[tag], idType="userID", rules=[rule(50, country())], store0100Exposures=True)
    console.create_gate(tags=[tag], idType="stableID", rules=[rule(50, country())])
    listing = console.list_gates(tags=tag, idType="stableID", type="TEMPORARY", store0100Exposures="true")
    assert ids_of(listing) == {match["id"]}
    assert listing["pagination"]["totalItems"] == 1


@pytest.mark.parametrize(
    ("param", "value"),
    [
        ("type", "FOO"),
        ("typeReason", "STALE_FOREVER"),
        ("passRate", "50"),
        ("rolloutRate", "SOME"),
        ("includeArchived", "yes"),
        ("includeArchived", "1"),
        ("store0100Exposures", "yes"),
        ("limit", "1001"),
        ("limit", "ten"),
        ("page", "0"),
        ("page", "-1"),
    ],
)
def test_invalid_list_parameter_is_400_naming_it(console: Console, param: str, value: str) -> None:
    body = assert_error(console.get(GATES, params={param: value}), 400)
    # A parameter that takes several values may be named with the index of the bad one.
    named = [e["field"] for e in body.get("errors") or [] if re.fullmatch(rf"{param}(\[\d+\])?", e["field"])]
    assert named, f"no error names {param!r}: {body}"
    assert param in body["message"], body


# --- pagination ------------------------------------------------------------------------------------


def test_default_pagination(console: Console) -> None:
    tag = f"t-{uid()}"
    gates = [console.create_gate(tags=[tag]) for _ in range(2)]
    listing = console.list_gates(tags=tag)
    pagination = listing["pagination"]
    assert pagination["pageNumber"] == 1
    assert pagination["itemsPerPage"] == 100
    assert pagination["totalItems"] == 2
    assert pagination["nextPage"] is None
    assert pagination["previousPage"] is None
    assert isinstance(pagination["all"], str)
    assert ids_of(listing) == {g["id"] for g in gates}


def test_pagination_links_keep_every_other_filter(console: Console) -> None:
    tag = f"t-{uid()}"
    for _ in range(3):
        console.create_gate(tags=[tag], idType="stableID", rules=[rule(50, country())])
    listing = console.list_gates(tags=tag, idType="stableID", type="TEMPORARY", limit=1, page=2)
    pagination = listing["pagination"]
    expected = {"tags": [tag], "idType": ["stableID"], "type": ["TEMPORARY"], "limit": ["1"]}
    assert parse_qs(urlsplit(pagination["nextPage"]).query) == {**expected, "page": ["3"]}
    assert parse_qs(urlsplit(pagination["previousPage"]).query) == {**expected, "page": ["1"]}


def test_page_past_the_end_is_empty(console: Console) -> None:
    tag = f"t-{uid()}"
    console.create_gate(tags=[tag])
    listing = console.list_gates(tags=tag, page=3, limit=10)
    assert listing["data"] == []
    assert listing["pagination"]["totalItems"] == 1
    assert listing["pagination"]["nextPage"] is None
    assert listing["pagination"]["pageNumber"] == 3


def test_limit_of_1000_is_accepted(console: Console) -> None:
    tag = f"t-{uid()}"
    gate = console.create_gate(tags=[tag])
    listing = console.list_gates(tags=tag, limit=1000)
    assert listing["pagination"]["itemsPerPage"] == 1000
    assert ids_of(listing) == {gate["id"]}
