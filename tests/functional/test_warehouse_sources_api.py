"""In-process tests of the warehouse sources, qualifying event sources
(`/console/v1/experiments/qualifying_events`) and assignment sources
(`/console/v1/experiments/assignment_sources`, `.../assignment_source/{name}`): create, read, list,
update, patch, delete, dry runs, limits at their edges, the SQL checks, name immutability, 404s,
409s and authentication.

The handlers are called in process (tests/functional/lambdas.py) on one moto store per module, so
every test makes its own entities (unique ids) and narrows list assertions with a tag of its own.
What needs the gateway or real concurrency (keys, raw bodies, parallel writes) stays in
`tests/e2e/test_warehouse_sources.py`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests

from tests.e2e.client import assert_error, error_for, uid

QE = "/console/v1/experiments/qualifying_events"
AS_LIST = "/console/v1/experiments/assignment_sources"
AS_ONE = "/console/v1/experiments/assignment_source"
NOT_QUERIED = "the warehouse itself was not queried"

QE_SQL = "SELECT user_id, device_id, ts, event_date, price FROM analytics.events"
AS_SQL = "SELECT user_id, ts, experiment_id, group_id, group_name FROM analytics.exposures"

BOOKKEEPING = {
    "version",
    "creatorID",
    "creatorName",
    "creatorEmail",
    "createdTime",
    "lastModifierID",
    "lastModifierName",
    "lastModifierEmail",
    "lastModifiedTime",
}
AS_FIELDS = {
    "name",
    "description",
    "tags",
    "sql",
    "timestampColumn",
    "experimentIDColumn",
    "groupIDColumn",
    "idTypeMapping",
    "isVerified",
    "isReadOnly",
    "owner",
    "team",
    "teamID",
    "scheduledReloadHour",
} | BOOKKEEPING


def mapping(column: str = "user_id", unit: str = "userID") -> dict[str, str]:
    return {"serviceUnitID": unit, "column": column}


def qe_body(**fields: Any) -> dict[str, Any]:
    body = {
        "name": f"qe_{uid()}",
        "sql": QE_SQL,
        "timestampColumn": "ts",
        "idTypeMapping": [mapping()],
    }
    body.update(fields)
    return {k: v for k, v in body.items() if v is not ...}


def as_body(**fields: Any) -> dict[str, Any]:
    body = {
        "name": f"as_{uid()}",
        "sql": AS_SQL,
        "timestampColumn": "ts",
        "experimentIDColumn": "experiment_id",
        "groupIDColumn": "group_id",
        "idTypeMapping": [mapping()],
    }
    body.update(fields)
    return {k: v for k, v in body.items() if v is not ...}


def qe_path(name: str) -> str:
    return f"{QE}/{quote(name, safe='')}"


def as_path(name: str) -> str:
    return f"{AS_ONE}/{quote(name, safe='')}"


def create_qe(api: requests.Session, **fields: Any) -> dict[str, Any]:
    resp = api.post(QE, json=qe_body(**fields))
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def create_as(api: requests.Session, **fields: Any) -> dict[str, Any]:
    resp = api.post(AS_LIST, json=as_body(**fields))
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def read(api: requests.Session, path: str) -> dict[str, Any]:
    resp = api.get(path)
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


def test_read_qualifying_event_message(api: requests.Session) -> None:
    source = create_qe(api)
    resp = api.get(qe_path(source["name"]))
    assert resp.json() == {"message": "Qualifying event read successfully.", "data": source}


def test_defaults_of_an_unset_optional_field(api: requests.Session) -> None:
    data = create_qe(api)
    assert data["description"] == ""
    assert data["tags"] == []
    assert data["timestampAsDay"] is False
    assert data["customFieldMapping"] == []
    assert "datePartitionColumn" not in data
    assert "all_columns" not in data and "column_types" not in data
    assert data["team"] is None and data["teamID"] is None


def test_given_owner_is_kept(api: requests.Session) -> None:
    owner = {"ownerID": "u-1", "ownerType": "USER", "ownerName": "Ada", "ownerEmail": "ada@example.com"}
    assert create_qe(api, owner=owner)["owner"] == owner


def test_table_source_as_the_peer_shows_it(api: requests.Session) -> None:
    body = qe_body(
        sql="SELECT * FROM `shoppy-sales.logging.events`",
        sourceType="table",
        tableName="shoppy-sales.logging.events",
        datePartitionColumn="event_date",
    )
    resp = api.post(QE, json=body)
    assert resp.status_code == 201, resp.text
    data = resp.json()["data"]
    assert data["sourceType"] == "table"
    assert data["tableName"] == "shoppy-sales.logging.events"
    assert data["datePartitionColumn"] == "event_date"
    # `SELECT *` hides the columns from a text check: the message says which were not checked.
    message = resp.json()["message"]
    assert message.startswith("Qualifying event created successfully.")
    assert "timestampColumn" in message and "idTypeMapping[0].column" in message
    assert "not queried" in message


def test_table_source_with_unquoted_hyphenated_name_and_qualifiers(api: requests.Session) -> None:
    data = create_qe(
        api,
        sql="SELECT e.user_id, e.ts FROM shoppy-sales.logging.events AS e",
        sourceType="table",
        tableName="logging.events",
    )
    assert data["tableName"] == "logging.events"


def test_duplicate_qualifying_event_name_is_409_and_keeps_the_first(api: requests.Session) -> None:
    first = create_qe(api, description="first")
    resp = api.post(QE, json=qe_body(name=first["name"], description="second"))
    body = assert_error(resp, 409)
    assert first["name"] in body["message"]
    assert read(api, qe_path(first["name"])) == first


def test_dry_run_create_validates_and_stores_nothing(api: requests.Session) -> None:
    body = qe_body(dryRun=True, description="only a test")
    resp = api.post(QE, json=body)
    assert resp.status_code == 200, resp.text
    assert "dry run" in resp.json()["message"]
    data = resp.json()["data"]
    assert data["name"] == body["name"]
    assert data["description"] == "only a test"
    assert "dryRun" not in data
    assert_error(api.get(qe_path(body["name"])), 404)
    names = {s["name"] for s in api.get(QE, params={"limit": 1000}).json()["data"]}
    assert body["name"] not in names
    # The real create still works afterwards.
    assert api.post(QE, json={**body, "dryRun": False}).status_code == 201


def test_dry_run_create_still_refuses_bad_input_and_taken_names(api: requests.Session) -> None:
    assert_error(api.post(QE, json=qe_body(dryRun=True, sql="DROP TABLE x")), 400, "sql")
    taken = create_qe(api)
    assert_error(api.post(QE, json=qe_body(dryRun=True, name=taken["name"])), 409)


# --- qualifying events: limits ------------------------------------------------------------------


def padded_sql(length: int) -> str:
    """QE_SQL padded with a comment to exactly `length` characters."""
    base = QE_SQL + " --"
    return base + "x" * (length - len(base))


def many_mappings(count: int) -> tuple[str, list[dict[str, str]]]:
    columns = [f"c{i}" for i in range(count)]
    return "SELECT ts, " + ", ".join(columns) + " FROM t", [
        mapping(c, f"unit{i}") for i, c in enumerate(columns)
    ]


SQL_100 = many_mappings(100)
SQL_101 = many_mappings(101)
LONG_COLUMN = "c" * 300
LONG_TABLE = "t" * 500
AS_COLUMNS = "SELECT ts, experiment_id, group_id"


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"name": f"q{uid()[:2]}"}, id="name-3-chars"),
        pytest.param({"name": "n" * 88 + uid()}, id="name-100-chars"),
        pytest.param({"name": f"v1.2 src_new-ui {uid()}"}, id="name-all-allowed-characters"),
        pytest.param({"description": "d" * 1000}, id="description-1000-chars"),
        pytest.param({"tags": ["t" * 100]}, id="tag-100-chars"),
        pytest.param({"sql": padded_sql(50_000)}, id="sql-50000-chars"),
        pytest.param(
            {"sql": f"SELECT user_id, {LONG_COLUMN} FROM t", "timestampColumn": LONG_COLUMN},
            id="column-300-chars",
        ),
        pytest.param({"idTypeMapping": [mapping(unit="u" * 100)]}, id="service-unit-id-100-chars"),
        pytest.param({"sql": SQL_100[0], "idTypeMapping": SQL_100[1]}, id="id-type-mapping-100"),
        pytest.param(
            {"customFieldMapping": [{"key": f"k{i}", "formula": "price"} for i in range(100)]},
            id="custom-field-mapping-100",
        ),
        pytest.param(
            {"customFieldMapping": [{"key": "k" * 100, "formula": "price + " + "1" * 9992}]},
            id="custom-field-key-100-formula-10000",
        ),
        pytest.param(
            {"sql": f"SELECT * FROM {LONG_TABLE}", "sourceType": "table", "tableName": LONG_TABLE},
            id="table-name-500-chars",
        ),
        pytest.param(
            {
                "skip_validation": True,
                "all_columns": ["ts", "user_id"] + [f"x{i}" for i in range(998)],
                "column_types": ["timestamp"] * 1000,
            },
            id="all-columns-1000",
        ),
        pytest.param(
            {
                "skip_validation": True,
                "all_columns": ["ts", "user_id"],
                "column_types": ["t" * 100, "string"],
            },
            id="column-type-100-chars",
        ),
    ],
)
def test_qualifying_event_values_at_the_limits_are_accepted(
    api: requests.Session, fields: dict[str, Any]
) -> None:
    resp = api.post(QE, json=qe_body(**fields))
    assert resp.status_code == 201, resp.text[:2000]
    data = resp.json()["data"]
    for key, value in fields.items():
        if key != "skip_validation":
            assert data[key] == value, key


BAD_QE_CREATES = [
    # required fields and types
    pytest.param({"name": ...}, "name", id="name-missing"),
    pytest.param({"sql": ...}, "sql", id="sql-missing"),
    pytest.param({"timestampColumn": ...}, "timestampColumn", id="timestamp-column-missing"),
    pytest.param({"idTypeMapping": ...}, "idTypeMapping", id="id-type-mapping-missing"),
    pytest.param({"idTypeMapping": []}, "idTypeMapping", id="id-type-mapping-empty"),
    pytest.param(
        {"idTypeMapping": [{"column": "user_id"}]}, "idTypeMapping[0].serviceUnitID", id="unit-missing"
    ),
    pytest.param(
        {"idTypeMapping": [{"statsigUnitID": "userID", "column": "user_id"}]},
        "idTypeMapping[0].statsigUnitID",
        id="peer-field-name-unknown",
    ),
    pytest.param({"timestampAsDay": "true"}, "timestampAsDay", id="boolean-as-text"),
    pytest.param({"isVerified": 1}, "isVerified", id="boolean-as-number"),
    pytest.param({"sql": 5}, "sql", id="sql-not-a-string"),
    pytest.param({"surprise": 1}, "surprise", id="unknown-field"),
    # limits just outside
    pytest.param({"name": "ab"}, "name", id="name-2-chars"),
    pytest.param({"name": "n" * 101}, "name", id="name-101-chars"),
    pytest.param({"name": "a/b c"}, "name", id="name-with-slash"),
    pytest.param({"description": "d" * 1001}, "description", id="description-1001-chars"),
    pytest.param({"tags": ["t" * 101]}, "tags[0]", id="tag-101-chars"),
    pytest.param({"tags": [""]}, "tags[0]", id="tag-empty"),
    pytest.param({"sql": ""}, "sql", id="sql-empty"),
    pytest.param({"sql": padded_sql(50_001)}, "sql", id="sql-50001-chars"),
    pytest.param({"timestampColumn": ""}, "timestampColumn", id="column-empty"),
    pytest.param({"timestampColumn": "c" * 301}, "timestampColumn", id="column-301-chars"),
    pytest.param({"timestampColumn": " ts"}, "timestampColumn", id="column-leading-space"),
    pytest.param({"timestampColumn": "t\ns"}, "timestampColumn", id="column-control-character"),
    pytest.param({"idTypeMapping": [mapping("")]}, "idTypeMapping[0].column", id="id-column-empty"),
    pytest.param({"idTypeMapping": [mapping(unit="")]}, "idTypeMapping[0].serviceUnitID", id="unit-empty"),
    pytest.param(
        {"idTypeMapping": [mapping(unit="u" * 101)]}, "idTypeMapping[0].serviceUnitID", id="unit-101"
    ),
    pytest.param({"sql": SQL_101[0], "idTypeMapping": SQL_101[1]}, "idTypeMapping", id="id-type-mapping-101"),
    pytest.param(
        {"idTypeMapping": [mapping(), mapping("device_id")]},
        "idTypeMapping[1].serviceUnitID",
        id="unit-mapped-twice",
    ),
    pytest.param({"sourceType": "view"}, "sourceType", id="source-type-unknown"),
    pytest.param({"sourceType": "table"}, "tableName", id="table-without-table-name"),
    pytest.param({"sourceType": "table", "tableName": ""}, "tableName", id="table-with-empty-table-name"),
    pytest.param({"tableName": "analytics.events"}, "tableName", id="table-name-on-a-query"),
    pytest.param({"datePartitionColumn": "event_date"}, "datePartitionColumn", id="partition-on-a-query"),
    pytest.param(
        {"sql": f"SELECT * FROM {LONG_TABLE}t", "sourceType": "table", "tableName": LONG_TABLE + "t"},
        "tableName",
        id="table-name-501-chars",
    ),
    pytest.param(
        {"sourceType": "table", "tableName": "analytics.other"}, "tableName", id="table-not-read-by-sql"
    ),
    pytest.param(
        {"sourceType": "table", "tableName": "events; drop table x"}, "tableName", id="table-name-not-a-name"
    ),
    pytest.param(
        {"sourceType": "table", "tableName": "analytics.events", "datePartitionColumn": "day"},
        "datePartitionColumn",
        id="partition-column-not-in-sql",
    ),
    pytest.param(
        {"customFieldMapping": [{"key": f"k{i}", "formula": "price"} for i in range(101)]},
        "customFieldMapping",
        id="custom-field-mapping-101",
    ),
    pytest.param(
        {"customFieldMapping": [{"key": "", "formula": "price"}]}, "customFieldMapping[0].key", id="key-empty"
    ),
    pytest.param(
        {"customFieldMapping": [{"key": "k" * 101, "formula": "price"}]},
        "customFieldMapping[0].key",
        id="key-101",
    ),
    pytest.param(
        {"customFieldMapping": [{"key": "k", "formula": ""}]},
        "customFieldMapping[0].formula",
        id="formula-empty",
    ),
    pytest.param(
        {"customFieldMapping": [{"key": "k", "formula": "1" * 10_001}]},
        "customFieldMapping[0].formula",
        id="formula-10001",
    ),
    pytest.param(
        {"customFieldMapping": [{"key": "k", "formula": "price; DROP TABLE t"}]},
        "customFieldMapping[0].formula",
        id="formula-two-statements",
    ),
    pytest.param(
        {"customFieldMapping": [{"key": "k", "formula": "price"}, {"key": "k", "formula": "ts"}]},
        "customFieldMapping[1].key",
        id="key-twice",
    ),
    pytest.param({"owner": {"ownerType": "USER"}}, "owner.ownerID", id="owner-without-id"),
    pytest.param({"team": 5}, "team", id="team-not-a-string"),
    # skip_validation
    pytest.param(
        {"skip_validation": True, "column_types": ["string"]}, "all_columns", id="skip-without-columns"
    ),
    pytest.param(
        {"skip_validation": True, "all_columns": ["ts", "user_id"]}, "column_types", id="skip-without-types"
    ),
    pytest.param(
        {"skip_validation": True, "all_columns": ["ts", "user_id"], "column_types": ["timestamp"]},
        "column_types",
        id="skip-with-unequal-lengths",
    ),
    pytest.param(
        {"skip_validation": True, "all_columns": ["ts", "user_id", "TS"], "column_types": ["a", "b", "c"]},
        "all_columns[2]",
        id="skip-with-repeated-column",
    ),
    pytest.param(
        {"skip_validation": True, "all_columns": [], "column_types": []},
        "all_columns",
        id="skip-with-no-columns",
    ),
    pytest.param(
        {
            "skip_validation": True,
            "all_columns": ["ts", "user_id"] + [f"x{i}" for i in range(999)],
            "column_types": ["timestamp"] * 1001,
        },
        "all_columns",
        id="all-columns-1001",
    ),
    pytest.param(
        {"skip_validation": True, "all_columns": ["ts", "user_id"], "column_types": ["t" * 101, "s"]},
        "column_types[0]",
        id="column-type-101-chars",
    ),
    pytest.param(
        {"skip_validation": True, "all_columns": ["user_id"], "column_types": ["string"]},
        "timestampColumn",
        id="skip-column-not-in-all-columns",
    ),
    pytest.param({"all_columns": ["ts"]}, "all_columns", id="all-columns-without-skip"),
    pytest.param({"column_types": ["string"]}, "column_types", id="column-types-without-skip"),
    # the SQL checks
    pytest.param({"sql": "DELETE FROM analytics.events"}, "sql", id="sql-not-a-select"),
    pytest.param({"sql": QE_SQL + "; DROP TABLE analytics.events"}, "sql", id="sql-two-statements"),
    pytest.param(
        {"sql": "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d"}, "sql", id="sql-writing-cte"
    ),
    pytest.param({"sql": "SELECT 'open FROM t"}, "sql", id="sql-unclosed-literal"),
    pytest.param({"sql": "-- nothing but a comment"}, "sql", id="sql-only-a-comment"),
    pytest.param({"timestampColumn": "created_at"}, "timestampColumn", id="timestamp-column-not-in-sql"),
    pytest.param(
        {"idTypeMapping": [mapping(), mapping("account_id", "accountID")]},
        "idTypeMapping[1].column",
        id="id-column-not-in-sql",
    ),
    pytest.param(
        {"sql": "SELECT user_id, 'ts' AS x FROM t -- ts"},
        "timestampColumn",
        id="column-only-in-literal-and-comment",
    ),
]


@pytest.mark.parametrize(("fields", "field"), BAD_QE_CREATES)
def test_bad_qualifying_event_is_400_naming_the_field(
    api: requests.Session, fields: dict[str, Any], field: str
) -> None:
    body = qe_body(**fields)
    assert_error(api.post(QE, json=body), 400, field)
    if isinstance(body.get("name"), str):
        assert_error(api.get(qe_path(body["name"])), 404)


def test_sql_errors_say_what_was_checked_and_that_the_warehouse_was_not_queried(
    api: requests.Session,
) -> None:
    body = assert_error(
        api.post(QE, json=qe_body(sql=QE_SQL + " WHERE x IN (SELECT 1) FOR UPDATE")), 400, "sql"
    )
    message = error_for(body, "sql")
    assert "UPDATE" in message and "read-only" in message and NOT_QUERIED in message

    body = assert_error(api.post(QE, json=qe_body(timestampColumn="created_at")), 400, "timestampColumn")
    message = error_for(body, "timestampColumn")
    assert "'created_at'" in message and "does not appear in sql" in message and NOT_QUERIED in message

    body = assert_error(api.post(QE, json=qe_body(sql=QE_SQL + ";\nSELECT 1")), 400, "sql")
    assert "line 2, column 1" in error_for(body, "sql")


def test_every_problem_is_reported_at_once(api: requests.Session) -> None:
    body = qe_body(
        sql="SELECT user_id FROM t; DROP TABLE t",
        timestampColumn="created",
        idTypeMapping=[mapping(), mapping("dev", "stableID")],
    )
    errors = assert_error(api.post(QE, json=body), 400)["errors"]
    assert {"sql", "timestampColumn", "idTypeMapping[1].column"} <= {e["field"] for e in errors}


def test_writing_keywords_inside_literals_quoted_names_and_comments_are_fine(api: requests.Session) -> None:
    sql = (
        "-- delete old rows? no: this only reads\n"
        "SELECT user_id, ts, \"update\" AS kind, 'drop; insert' AS note /* truncate */\n"
        "FROM analytics.events;"
    )
    assert create_qe(api, sql=sql)["sql"] == sql


def test_skip_validation_checks_columns_against_all_columns(api: requests.Session) -> None:
    # The SQL does not name the columns; all_columns does.
    data = create_qe(
        api,
        sql="SELECT * EXCEPT (secret) FROM analytics.events",
        skip_validation=True,
        all_columns=["user_id", "ts", "price"],
        column_types=["string", "timestamp", "float"],
    )
    assert data["all_columns"] == ["user_id", "ts", "price"]
    assert data["column_types"] == ["string", "timestamp", "float"]
    assert "skip_validation" not in data
    # With skip_validation the SQL must still be read-only.
    body = qe_body(
        sql="DROP TABLE t", skip_validation=True, all_columns=["ts", "user_id"], column_types=["a", "b"]
    )
    assert_error(api.post(QE, json=body), 400, "sql")


def test_source_too_large_to_store_is_413(api: requests.Session) -> None:
    # 30,000 astral characters are 12 bytes each once stored as escaped JSON: as for every kind,
    # the stored size is a 413 counted in bytes.
    sql = QE_SQL + " -- " + "\U0001f600" * 30_000
    body = assert_error(api.post(QE, json=qe_body(sql=sql)), 413)
    assert "too large" in body["message"]


# --- qualifying events: list --------------------------------------------------------------------


def test_list_qualifying_events_walks_every_source_once(api: requests.Session) -> None:
    mine = [create_qe(api)["name"] for _ in range(3)]
    first = api.get(QE, params={"limit": 2})
    assert first.status_code == 200, first.text
    page = first.json()
    assert page["message"] == "Qualifying events listed successfully."
    total = page["pagination"]["totalItems"]
    assert total >= 3
    assert page["pagination"]["itemsPerPage"] == 2
    assert page["pagination"]["pageNumber"] == 1
    assert page["pagination"]["previousPage"] is None
    seen = [s["name"] for s in page["data"]]
    link = page["pagination"]["nextPage"]
    while link is not None:
        parts = urlsplit(link)
        assert parts.path == QE and not parts.netloc, link
        resp = api.get(link)
        assert resp.status_code == 200, resp.text
        page = resp.json()
        assert page["pagination"]["totalItems"] == total
        seen.extend(s["name"] for s in page["data"])
        link = page["pagination"]["nextPage"]
    assert len(seen) == len(set(seen)) == total
    assert seen[-3:] == mine  # oldest first
    previous = urlsplit(page["pagination"]["previousPage"])  # total >= 3: the last page is not the first
    assert previous.path == QE
    assert parse_qs(previous.query)["limit"] == ["2"]


def test_list_qualifying_events_default_page(api: requests.Session) -> None:
    source = create_qe(api)
    page = api.get(QE).json()
    assert page["pagination"]["itemsPerPage"] == 100
    assert page["pagination"]["pageNumber"] == 1
    assert isinstance(page["pagination"]["all"], str)
    if page["pagination"]["totalItems"] <= 100:
        assert source in page["data"]


@pytest.mark.parametrize(
    ("param", "value"), [("limit", "0"), ("limit", "1001"), ("page", "0"), ("limit", "x")]
)
def test_bad_list_parameters_are_400(api: requests.Session, param: str, value: str) -> None:
    for path in (QE, AS_LIST):
        assert_error(api.get(path, params={param: value}), 400, param)


def test_list_limit_1000_is_accepted(api: requests.Session) -> None:
    for path in (QE, AS_LIST):
        resp = api.get(path, params={"limit": 1000})
        assert resp.status_code == 200, resp.text
        assert resp.json()["pagination"]["itemsPerPage"] == 1000


# --- qualifying events: update ------------------------------------------------------------------


def test_update_qualifying_event(api: requests.Session) -> None:
    source = create_qe(api, description="before", tags=["a"], isVerified=True)
    change = {
        "sql": "SELECT account_id, created FROM analytics.accounts",
        "timestampColumn": "created",
        "idTypeMapping": [mapping("account_id", "accountID")],
        "description": "after",
    }
    resp = api.post(qe_path(source["name"]), json=change)
    assert resp.status_code == 200, resp.text
    assert resp.json()["message"] == "Qualifying event updated successfully."
    data = resp.json()["data"]
    for key, value in change.items():
        assert data[key] == value
    assert data["tags"] == ["a"] and data["isVerified"] is True  # left out: kept
    assert data["version"] == source["version"] + 1
    assert data["lastModifiedTime"] >= source["lastModifiedTime"]
    assert data["createdTime"] == source["createdTime"]
    assert data["creatorID"] == source["creatorID"]
    assert read(api, qe_path(source["name"])) == data


def required_qe(source: dict[str, Any]) -> dict[str, Any]:
    return {k: source[k] for k in ("sql", "timestampColumn", "idTypeMapping")}


def test_update_with_the_same_name_is_accepted(api: requests.Session) -> None:
    source = create_qe(api)
    resp = api.post(
        qe_path(source["name"]), json={**required_qe(source), "name": source["name"], "tags": ["x"]}
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["tags"] == ["x"]


@pytest.mark.parametrize("new_name", ["another_name", 5, ""])
def test_update_cannot_change_the_name(api: requests.Session, new_name: Any) -> None:
    source = create_qe(api)
    body = assert_error(
        api.post(qe_path(source["name"]), json={**required_qe(source), "name": new_name, "description": "x"}),
        400,
        "name",
    )
    assert "cannot change" in body["message"]
    assert read(api, qe_path(source["name"])) == source


@pytest.mark.parametrize("missing", ["sql", "timestampColumn", "idTypeMapping"])
def test_update_requires_sql_timestamp_column_and_id_type_mapping(
    api: requests.Session, missing: str
) -> None:
    source = create_qe(api)
    body = required_qe(source)
    del body[missing]
    assert_error(api.post(qe_path(source["name"]), json=body), 400, missing)
    assert read(api, qe_path(source["name"])) == source


def test_update_with_bad_sql_changes_nothing(api: requests.Session) -> None:
    source = create_qe(api)
    body = {**required_qe(source), "sql": "SELECT user_id FROM t", "description": "new"}
    assert_error(api.post(qe_path(source["name"]), json=body), 400, "timestampColumn")
    assert read(api, qe_path(source["name"])) == source


def test_update_unknown_qualifying_event_is_404(api: requests.Session) -> None:
    body = {"sql": QE_SQL, "timestampColumn": "ts", "idTypeMapping": [mapping()]}
    assert_error(api.post(qe_path(f"missing_{uid()}"), json=body), 404)


def test_update_dry_run_changes_nothing(api: requests.Session) -> None:
    source = create_qe(api)
    resp = api.post(
        qe_path(source["name"]), json={**required_qe(source), "description": "maybe", "dryRun": True}
    )
    assert resp.status_code == 200, resp.text
    assert "dry run" in resp.json()["message"]
    assert resp.json()["data"]["description"] == "maybe"
    assert resp.json()["data"]["version"] == source["version"] + 1
    assert read(api, qe_path(source["name"])) == source
    bad = {**required_qe(source), "timestampColumn": "nope", "dryRun": True}
    assert_error(api.post(qe_path(source["name"]), json=bad), 400, "timestampColumn")


def test_update_with_a_stale_version_is_409(api: requests.Session) -> None:
    source = create_qe(api)
    path = qe_path(source["name"])
    ok = api.post(path, json={**required_qe(source), "description": "one", "version": 1})
    assert ok.status_code == 200, ok.text
    assert_error(api.post(path, json={**required_qe(source), "description": "two", "version": 1}), 409)
    assert read(api, path)["description"] == "one"


def test_switching_a_table_source_to_a_query_clears_the_table_fields(api: requests.Session) -> None:
    source = create_qe(
        api,
        sql="SELECT user_id, ts, day FROM analytics.events",
        sourceType="table",
        tableName="analytics.events",
        datePartitionColumn="day",
    )
    body = {**required_qe(source), "sourceType": "query"}
    data = api.post(qe_path(source["name"]), json=body).json()["data"]
    assert data["sourceType"] == "query"
    assert data["tableName"] == ""
    assert "datePartitionColumn" not in data
    # ... and back to a table: the table name is required again.
    assert_error(api.post(qe_path(source["name"]), json={**body, "sourceType": "table"}), 400, "tableName")


def test_date_partition_column_null_clears_it(api: requests.Session) -> None:
    source = create_qe(
        api,
        sql="SELECT user_id, ts, day FROM analytics.events",
        sourceType="table",
        tableName="analytics.events",
        datePartitionColumn="day",
    )
    resp = api.post(qe_path(source["name"]), json={**required_qe(source), "datePartitionColumn": None})
    assert resp.status_code == 200, resp.text
    assert "datePartitionColumn" not in resp.json()["data"]
    assert resp.json()["data"]["tableName"] == "analytics.events"


def test_query_source_sent_back_as_read_is_accepted(api: requests.Session) -> None:
    source = create_qe(api)
    fields = ("sql", "timestampColumn", "idTypeMapping", "sourceType", "tableName", "description", "tags")
    resp = api.post(qe_path(source["name"]), json={k: source[k] for k in fields})
    assert resp.status_code == 200, resp.text
    assert {k: resp.json()["data"][k] for k in fields} == {k: source[k] for k in fields}


def test_update_without_skip_validation_drops_all_columns(api: requests.Session) -> None:
    source = create_qe(
        api,
        sql="SELECT * FROM t",
        skip_validation=True,
        all_columns=["ts", "user_id"],
        column_types=["timestamp", "string"],
    )
    assert source["all_columns"] == ["ts", "user_id"]
    data = api.post(qe_path(source["name"]), json=required_qe(source)).json()["data"]
    assert "all_columns" not in data and "column_types" not in data
    resp = api.post(qe_path(source["name"]), json={**required_qe(source), "all_columns": ["ts"]})
    assert_error(resp, 400, "all_columns")


def test_update_with_skip_validation_needs_the_columns(api: requests.Session) -> None:
    source = create_qe(api)
    body = {**required_qe(source), "skip_validation": True}
    assert_error(api.post(qe_path(source["name"]), json=body), 400, "all_columns")
    body.update(all_columns=["ts", "user_id"], column_types=["timestamp", "string"])
    data = api.post(qe_path(source["name"]), json=body).json()["data"]
    assert data["all_columns"] == ["ts", "user_id"]


# --- qualifying events: delete ------------------------------------------------------------------


def test_delete_qualifying_event(api: requests.Session) -> None:
    source = create_qe(api)
    resp = api.delete(qe_path(source["name"]))
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"message": "Qualifying event deleted successfully."}
    assert_error(api.get(qe_path(source["name"])), 404)
    assert_error(api.delete(qe_path(source["name"])), 404)
    # The name is free again, with a fresh history.
    again = create_qe(api, name=source["name"])
    assert again["version"] == 1


def test_delete_unknown_qualifying_event_is_404(api: requests.Session) -> None:
    assert_error(api.delete(qe_path(f"missing_{uid()}")), 404)


def test_assignment_source_optional_fields_when_unset(api: requests.Session) -> None:
    data = create_as(api)
    assert set(data) == AS_FIELDS
    assert data["scheduledReloadHour"] is None
    assert "groupNameColumn" not in data
    assert data["description"] == "" and data["tags"] == []


def test_assignment_source_as_the_peer_shows_it(api: requests.Session) -> None:
    body = {
        "name": f"exposures_{uid()}",
        "sql": "SELECT * FROM shoppy-sales.experiment_data.exposures",
        "timestampColumn": "ts",
        "groupIDColumn": "group_id",
        "experimentIDColumn": "experiment_name",
        "idTypeMapping": [mapping(unit="stableID")],
    }
    resp = api.post(AS_LIST, json=body)
    assert resp.status_code == 201, resp.text
    assert "Not checked" in resp.json()["message"]


def test_duplicate_assignment_source_is_409(api: requests.Session) -> None:
    first = create_as(api)
    assert_error(api.post(AS_LIST, json=as_body(name=first["name"], description="second")), 409)
    assert read(api, as_path(first["name"])) == first


def test_assignment_source_dry_run_stores_nothing(api: requests.Session) -> None:
    body = as_body(dryRun=True)
    resp = api.post(AS_LIST, json=body)
    assert resp.status_code == 200, resp.text
    assert "dry run" in resp.json()["message"]
    assert resp.json()["data"]["name"] == body["name"]
    assert_error(api.get(as_path(body["name"])), 404)
    taken = create_as(api)
    assert_error(api.post(AS_LIST, json=as_body(name=taken["name"], dryRun=True)), 409)
    assert_error(api.post(AS_LIST, json=as_body(dryRun=True, groupIDColumn="nope")), 400, "groupIDColumn")


def test_get_unknown_assignment_source_is_404(api: requests.Session) -> None:
    assert_error(api.get(as_path(f"missing_{uid()}")), 404)


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"scheduledReloadHour": 0}, id="reload-hour-0"),
        pytest.param({"scheduledReloadHour": 23}, id="reload-hour-23"),
        pytest.param({"scheduledReloadHour": None}, id="reload-hour-null"),
        pytest.param({"name": f"a{uid()[:2]}"}, id="name-3-chars"),
        pytest.param({"name": "n" * 88 + uid()}, id="name-100-chars"),
        pytest.param({"description": "d" * 1000}, id="description-1000-chars"),
        pytest.param({"tags": ["t" * 100]}, id="tag-100-chars"),
        pytest.param({"sql": AS_SQL + " --" + "x" * (50_000 - len(AS_SQL) - 3)}, id="sql-50000-chars"),
        pytest.param(
            {"sql": f"SELECT user_id, ts, experiment_id, {LONG_COLUMN} FROM t", "groupIDColumn": LONG_COLUMN},
            id="column-300-chars",
        ),
        pytest.param(
            {"sql": SQL_100[0].replace("SELECT ts", AS_COLUMNS), "idTypeMapping": SQL_100[1]},
            id="id-type-mapping-100",
        ),
    ],
)
def test_assignment_source_values_at_the_limits_are_accepted(
    api: requests.Session, fields: dict[str, Any]
) -> None:
    resp = api.post(AS_LIST, json=as_body(**fields))
    assert resp.status_code == 201, resp.text[:2000]
    for key, value in fields.items():
        assert resp.json()["data"][key] == value, key


BAD_AS_CREATES = [
    pytest.param({"name": ...}, "name", id="name-missing"),
    pytest.param({"sql": ...}, "sql", id="sql-missing"),
    pytest.param({"experimentIDColumn": ...}, "experimentIDColumn", id="experiment-column-missing"),
    pytest.param({"groupIDColumn": ...}, "groupIDColumn", id="group-column-missing"),
    pytest.param({"timestampColumn": ...}, "timestampColumn", id="timestamp-column-missing"),
    pytest.param({"idTypeMapping": ...}, "idTypeMapping", id="id-type-mapping-missing"),
    pytest.param({"idTypeMapping": []}, "idTypeMapping", id="id-type-mapping-empty"),
    pytest.param({"scheduledReloadHour": -1}, "scheduledReloadHour", id="reload-hour-minus-1"),
    pytest.param({"scheduledReloadHour": 24}, "scheduledReloadHour", id="reload-hour-24"),
    pytest.param({"scheduledReloadHour": "5"}, "scheduledReloadHour", id="reload-hour-text"),
    pytest.param({"scheduledReloadHour": 5.5}, "scheduledReloadHour", id="reload-hour-fraction"),
    pytest.param({"scheduledReloadHour": True}, "scheduledReloadHour", id="reload-hour-boolean"),
    pytest.param({"name": "ab"}, "name", id="name-2-chars"),
    pytest.param({"name": "n" * 101}, "name", id="name-101-chars"),
    pytest.param({"description": "d" * 1001}, "description", id="description-1001-chars"),
    pytest.param({"tags": ["t" * 101]}, "tags[0]", id="tag-101-chars"),
    pytest.param({"sql": AS_SQL + " --" + "x" * (50_001 - len(AS_SQL) - 3)}, "sql", id="sql-50001-chars"),
    pytest.param({"groupIDColumn": "g" * 301}, "groupIDColumn", id="column-301-chars"),
    pytest.param({"groupNameColumn": ""}, "groupNameColumn", id="group-name-column-empty"),
    pytest.param(
        {"sql": SQL_101[0].replace("SELECT ts", AS_COLUMNS), "idTypeMapping": SQL_101[1]},
        "idTypeMapping",
        id="id-type-mapping-101",
    ),
    pytest.param({"groupIDColumn": "experiment_id"}, "groupIDColumn", id="group-column-same-as-experiment"),
    pytest.param(
        {"experimentIDColumn": "TS"}, "experimentIDColumn", id="experiment-column-same-as-timestamp"
    ),
    pytest.param({"experimentIDColumn": "exp"}, "experimentIDColumn", id="experiment-column-not-in-sql"),
    pytest.param({"groupIDColumn": "grp"}, "groupIDColumn", id="group-column-not-in-sql"),
    pytest.param({"groupNameColumn": "gname"}, "groupNameColumn", id="group-name-column-not-in-sql"),
    pytest.param({"timestampColumn": "at"}, "timestampColumn", id="timestamp-column-not-in-sql"),
    pytest.param({"idTypeMapping": [mapping("uid")]}, "idTypeMapping[0].column", id="id-column-not-in-sql"),
    pytest.param({"sql": "UPDATE exposures SET group_id = 1"}, "sql", id="sql-not-a-select"),
    pytest.param({"sql": AS_SQL + "; DELETE FROM x"}, "sql", id="sql-two-statements"),
    pytest.param({"skip_validation": True}, "skip_validation", id="skip-validation-not-a-field"),
    pytest.param({"isReadOnly": "false"}, "isReadOnly", id="boolean-as-text"),
]


@pytest.mark.parametrize(("fields", "field"), BAD_AS_CREATES)
def test_bad_assignment_source_is_400_naming_the_field(
    api: requests.Session, fields: dict[str, Any], field: str
) -> None:
    body = as_body(**fields)
    assert_error(api.post(AS_LIST, json=body), 400, field)
    if isinstance(body.get("name"), str):
        assert_error(api.get(as_path(body["name"])), 404)


def test_list_assignment_sources(api: requests.Session) -> None:
    mine = [create_as(api)["name"] for _ in range(3)]
    page = api.get(AS_LIST, params={"limit": 2}).json()
    assert page["message"] == "Assignment sources listed successfully."
    total = page["pagination"]["totalItems"]
    seen = [s["name"] for s in page["data"]]
    link = page["pagination"]["nextPage"]
    while link is not None:
        assert urlsplit(link).path == AS_LIST, link
        page = api.get(link).json()
        seen.extend(s["name"] for s in page["data"])
        link = page["pagination"]["nextPage"]
    assert len(seen) == len(set(seen)) == total
    assert seen[-3:] == mine
    assert all(set(s) >= AS_FIELDS for s in api.get(AS_LIST, params={"limit": 1000}).json()["data"])


# --- assignment sources: full update -----------------------------------------------------------


def required_as(source: dict[str, Any]) -> dict[str, Any]:
    return {
        k: source[k]
        for k in ("sql", "timestampColumn", "experimentIDColumn", "groupIDColumn", "idTypeMapping")
    }


def test_full_update_of_an_assignment_source(api: requests.Session) -> None:
    source = create_as(api, tags=["keep"], scheduledReloadHour=3)
    change = {
        "sql": "SELECT uid, at, exp, grp FROM other.exposures",
        "timestampColumn": "at",
        "experimentIDColumn": "exp",
        "groupIDColumn": "grp",
        "idTypeMapping": [mapping("uid")],
        "description": "moved",
    }
    resp = api.post(as_path(source["name"]), json=change)
    assert resp.status_code == 200, resp.text
    assert resp.json()["message"] == "Assignment source updated successfully."
    data = resp.json()["data"]
    for key, value in change.items():
        assert data[key] == value, key
    assert data["tags"] == ["keep"] and data["scheduledReloadHour"] == 3
    assert data["version"] == 2
    assert data["lastModifiedTime"] >= source["lastModifiedTime"]
    assert read(api, as_path(source["name"])) == data


@pytest.mark.parametrize(
    "missing", ["sql", "timestampColumn", "experimentIDColumn", "groupIDColumn", "idTypeMapping"]
)
def test_full_update_requires_the_sql_and_its_columns(api: requests.Session, missing: str) -> None:
    source = create_as(api)
    body = required_as(source)
    del body[missing]
    assert_error(api.post(as_path(source["name"]), json=body), 400, missing)
    assert read(api, as_path(source["name"])) == source


def test_full_update_cannot_rename(api: requests.Session) -> None:
    source = create_as(api)
    new_name = f"renamed_{uid()}"
    body = assert_error(
        api.post(as_path(source["name"]), json={**required_as(source), "name": new_name}), 400, "name"
    )
    assert "renamed" in body["message"]
    assert read(api, as_path(source["name"])) == source
    assert_error(api.get(as_path(new_name)), 404)
    same = api.post(as_path(source["name"]), json={**required_as(source), "name": source["name"]})
    assert same.status_code == 200, same.text


def test_full_update_of_unknown_assignment_source_is_404(api: requests.Session) -> None:
    source = as_body()
    assert_error(api.post(as_path(f"missing_{uid()}"), json=required_as(source)), 404)


def test_full_update_dry_run_changes_nothing(api: requests.Session) -> None:
    source = create_as(api)
    resp = api.post(as_path(source["name"]), json={**required_as(source), "description": "x", "dryRun": True})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["description"] == "x"
    assert read(api, as_path(source["name"])) == source


# --- assignment sources: patch ------------------------------------------------------------------


def test_patch_changes_only_the_fields_sent(api: requests.Session) -> None:
    source = create_as(api, description="d", tags=["a"], groupNameColumn="group_name")
    resp = api.patch(
        as_path(source["name"]),
        json={"description": "patched", "isVerified": True, "scheduledReloadHour": 23, "team": "core"},
    )
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["description"] == "patched"
    assert data["isVerified"] is True
    assert data["scheduledReloadHour"] == 23
    assert data["team"] == "core"
    assert data["version"] == source["version"] + 1
    for key in ("sql", "tags", "timestampColumn", "groupNameColumn", "idTypeMapping", "owner", "createdTime"):
        assert data[key] == source[key], key
    assert read(api, as_path(source["name"])) == data


def test_patch_columns_are_checked_against_the_stored_sql(api: requests.Session) -> None:
    source = create_as(api)
    ok = api.patch(
        as_path(source["name"]), json={"groupNameColumn": "group_name", "idTypeMapping": [mapping()]}
    )
    assert ok.status_code == 200, ok.text
    assert ok.json()["data"]["groupNameColumn"] == "group_name"
    body = assert_error(
        api.patch(as_path(source["name"]), json={"groupIDColumn": "grp"}), 400, "groupIDColumn"
    )
    assert NOT_QUERIED in error_for(body, "groupIDColumn")
    assert read(api, as_path(source["name"])) == ok.json()["data"]


@pytest.mark.parametrize("sql", [AS_SQL, None])
def test_patch_cannot_change_the_sql(api: requests.Session, sql: Any) -> None:
    source = create_as(api)
    body = assert_error(api.patch(as_path(source["name"]), json={"sql": sql}), 400, "sql")
    assert "full update" in error_for(body, "sql")
    assert read(api, as_path(source["name"])) == source


def test_patch_nulls_clear_the_nullable_fields(api: requests.Session) -> None:
    source = create_as(api, groupNameColumn="group_name", scheduledReloadHour=4, team="x", teamID="y")
    resp = api.patch(
        as_path(source["name"]),
        json={"groupNameColumn": None, "scheduledReloadHour": None, "team": None, "teamID": None},
    )
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert "groupNameColumn" not in data
    assert data["scheduledReloadHour"] is None and data["team"] is None and data["teamID"] is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"timestampColumn": None}, "timestampColumn"),
        ({"description": None}, "description"),
        ({"scheduledReloadHour": 24}, "scheduledReloadHour"),
        ({"scheduledReloadHour": -1}, "scheduledReloadHour"),
        ({"idTypeMapping": []}, "idTypeMapping"),
        ({"idTypeMapping": [mapping(), mapping("ts")]}, "idTypeMapping[1].serviceUnitID"),
        ({"experimentIDColumn": "group_id"}, "experimentIDColumn"),
        ({"description": "d" * 1001}, "description"),
        ({"name": f"other_{uid()}"}, "name"),
        ({"version": 0}, "version"),
        ({"unknown": 1}, "unknown"),
    ],
)
def test_bad_patch_is_400_and_changes_nothing(
    api: requests.Session, fields: dict[str, Any], field: str
) -> None:
    source = create_as(api)
    assert_error(api.patch(as_path(source["name"]), json=fields), 400, field)
    assert read(api, as_path(source["name"])) == source


@pytest.mark.parametrize("hour", [0, 23])
def test_patch_reload_hour_at_the_edges(api: requests.Session, hour: int) -> None:
    source = create_as(api)
    resp = api.patch(as_path(source["name"]), json={"scheduledReloadHour": hour})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["scheduledReloadHour"] == hour


def test_patch_with_the_same_name_is_accepted(api: requests.Session) -> None:
    source = create_as(api)
    resp = api.patch(as_path(source["name"]), json={"name": source["name"], "tags": ["n"]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"]["tags"] == ["n"]


def test_patch_dry_run_changes_nothing(api: requests.Session) -> None:
    source = create_as(api)
    resp = api.patch(as_path(source["name"]), json={"description": "maybe", "dryRun": True})
    assert resp.status_code == 200, resp.text
    assert "dry run" in resp.json()["message"]
    assert resp.json()["data"]["description"] == "maybe"
    assert read(api, as_path(source["name"])) == source


def test_patch_with_a_stale_version_is_409(api: requests.Session) -> None:
    source = create_as(api)
    path = as_path(source["name"])
    assert api.patch(path, json={"description": "one", "version": 1}).status_code == 200
    body = assert_error(api.patch(path, json={"description": "two", "version": 1}), 409)
    assert "version" in body["message"]
    assert read(api, path)["description"] == "one"
    assert api.patch(path, json={"description": "three", "version": 2}).status_code == 200


def test_patch_unknown_assignment_source_is_404(api: requests.Session) -> None:
    assert_error(api.patch(as_path(f"missing_{uid()}"), json={"description": "x"}), 404)


# --- assignment sources: delete -----------------------------------------------------------------


def test_delete_assignment_source(api: requests.Session) -> None:
    source = create_as(api)
    resp = api.delete(as_path(source["name"]))
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"message": "Assignment source deleted successfully."}
    assert_error(api.get(as_path(source["name"])), 404)
    assert_error(api.delete(as_path(source["name"])), 404)
    assert_error(api.patch(as_path(source["name"]), json={"description": "x"}), 404)


def test_delete_assignment_source_used_by_an_experiment_is_409(api: requests.Session) -> None:
    source = create_as(api)
    resp = api.post(
        "/console/v1/experiments",
        json={"name": f"exp {uid()}", "assignmentSourceName": source["name"]},
    )
    assert resp.status_code == 201, resp.text
    experiment = resp.json()["data"]
    body = assert_error(api.delete(as_path(source["name"])), 409)
    assert experiment["id"] in body["message"]
    assert read(api, as_path(source["name"])) == source
