"""The SQL checker of warehouse sources: tokenizing, one statement, read-only, named columns."""

from __future__ import annotations

import pytest

from expconsole.services import sql_check
from expconsole.services.sql_check import (
    NUMBER,
    PUNCT,
    QUOTED,
    STRING,
    WORD,
    SqlSyntaxError,
    check_expression,
    check_query,
    columns_not_listed,
    missing_columns,
    table_parts,
    tokenize,
)


def kinds_and_values(sql: str, **kwargs: bool) -> list[tuple[str, str]]:
    return [(t.kind, t.value) for t in tokenize(sql, **kwargs)]


def problems(sql: str) -> list[str]:
    return [p.message for p in check_query(sql)[1]]


def passes(sql: str) -> None:
    found = problems(sql)
    assert found == [], found


def fails(sql: str, *fragments: str) -> list[str]:
    found = problems(sql)
    assert found, f"accepted: {sql!r}"
    text = " | ".join(found)
    for fragment in fragments:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    assert all(sql_check.NOT_QUERIED in message for message in found), found
    return found


# --- tokenizer ----------------------------------------------------------------------------------


def test_tokens_of_a_simple_query() -> None:
    assert kinds_and_values("SELECT a, 1.5 FROM t;") == [
        (WORD, "SELECT"),
        (WORD, "a"),
        (PUNCT, ","),
        (NUMBER, "1.5"),
        (WORD, "FROM"),
        (WORD, "t"),
        (PUNCT, ";"),
    ]


def test_comments_are_skipped() -> None:
    assert kinds_and_values("-- drop\nSELECT /* delete; */ a -- end") == [(WORD, "SELECT"), (WORD, "a")]


def test_block_comments_do_not_nest() -> None:
    # Read as nested, DROP would be hidden; dialects that do not nest comments would run it.
    assert (WORD, "DROP") in kinds_and_values("SELECT 1 /* /* */ DROP */")


def test_string_literals_keep_their_content() -> None:
    assert kinds_and_values("SELECT 'it''s; drop'") == [(WORD, "SELECT"), (STRING, "it's; drop")]


def test_backslash_escapes_a_quote_only_in_the_backslash_reading() -> None:
    sql = r"SELECT 'a\' , b'"
    assert kinds_and_values(sql) == [(WORD, "SELECT"), (STRING, "a' , b")]
    assert kinds_and_values(sql + "'", backslash_escapes=False) == [
        (WORD, "SELECT"),
        (STRING, "a\\"),
        (PUNCT, ","),
        (WORD, "b"),
        (STRING, ""),
    ]


def test_quoted_identifiers() -> None:
    assert kinds_and_values('SELECT "my ""col""", `p-1.d.t`') == [
        (WORD, "SELECT"),
        (QUOTED, 'my "col"'),
        (PUNCT, ","),
        (QUOTED, "p-1.d.t"),
    ]


def test_dollar_quoted_strings() -> None:
    assert kinds_and_values("SELECT $$ drop ; $$, $x$ a $x$, $1") == [
        (WORD, "SELECT"),
        (STRING, " drop ; "),
        (PUNCT, ","),
        (STRING, " a "),
        (PUNCT, ","),
        (PUNCT, "$"),
        (NUMBER, "1"),
    ]


@pytest.mark.parametrize(
    ("sql", "what", "opened_at"),
    [
        ("SELECT 'abc", "string literal", 7),
        ('SELECT "abc', "quoted identifier", 7),
        ("SELECT `abc", "quoted identifier", 7),
        ("SELECT 1 /* open", "comment", 9),
        ("SELECT $$ open", "$$-quoted string", 7),
    ],
)
def test_unterminated_things_are_errors_with_a_position(sql: str, what: str, opened_at: int) -> None:
    with pytest.raises(SqlSyntaxError) as info:
        tokenize(sql)
    assert what in info.value.message
    assert info.value.position == opened_at
    found = fails(sql, what, "never closed", f"line 1, column {opened_at + 1}")
    assert len(found) == 1


# --- read-only, one statement -------------------------------------------------------------------


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT user_id, ts FROM events",
        "select user_id, ts from events;",
        "SELECT user_id, ts FROM events;;  -- trailing comment",
        "  -- leading comment\n/* block */ SELECT 1",
        "WITH e AS (SELECT user_id, ts FROM events) SELECT * FROM e",
        "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r) SELECT n FROM r",
        "(SELECT a FROM t) UNION ALL (SELECT a FROM u)",
        "SELECT 'insert into t; drop table x' AS note FROM t",
        'SELECT "delete", `update` FROM t',
        "SELECT a FROM t -- delete from t; drop table t",
        "SELECT a /* ; truncate t; */ FROM t",
        "SELECT $$ merge ; $$ AS x",
        "SELECT t.update, s.delete FROM t JOIN s ON t.id = s.id",
        "SELECT updated_at, created_by, deleted FROM t",
        "SELECT COUNT(*) FROM t WHERE DATE(ts) BETWEEN {start} AND {end}",
        r"SELECT 'it\'s' AS quote, a FROM t",
    ],
)
def test_read_only_single_queries_pass(sql: str) -> None:
    passes(sql)


@pytest.mark.parametrize(
    ("sql", "keyword"),
    [
        ("SELECT a FROM t; DELETE FROM t", "DELETE"),
        ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "DELETE"),
        ("WITH i AS (INSERT INTO t VALUES (1) RETURNING a) SELECT a FROM i", "INSERT"),
        ("SELECT a INTO new_table FROM t", "INTO"),
        ("SELECT a FROM t FOR UPDATE", "UPDATE"),
        ("SELECT a FROM t WHERE x = (SELECT 1) OR drop = 1", "DROP"),
        ("select a from t where b in (select merge from u)", "MERGE"),
        ("SELECT 'a' -- comment\n, grant FROM t", "GRANT"),
        ("SELECT call FROM t", "CALL"),
        ("SELECT exec, b FROM t", "EXEC"),
        ("SELECT a FROM t /* closed */ CREATE", "CREATE"),
    ],
)
def test_writing_keywords_outside_literals_and_comments_are_refused(sql: str, keyword: str) -> None:
    fails(sql, f"keyword {keyword}", "read-only")


def test_the_keyword_message_gives_its_position() -> None:
    fails("SELECT a\nFROM t\n  WHERE truncate", "keyword TRUNCATE at line 3, column 9")


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM t",
        "INSERT INTO t SELECT 1",
        "UPDATE t SET a = 1",
        "DROP TABLE t",
        "CREATE TABLE t AS SELECT 1",
        "SHOW TABLES",
        "VALUES (1)",
        "EXPLAIN SELECT 1",
    ],
)
def test_statements_that_are_not_select_or_with_are_refused(sql: str) -> None:
    fails(sql, "must be a read-only query starting with SELECT or WITH")


def test_the_start_check_names_the_first_token() -> None:
    fails("/* c */ SHOW TABLES", "starts with `SHOW` at line 1, column 9")


@pytest.mark.parametrize(
    ("sql", "second"),
    [
        ("SELECT 1; SELECT 2", "`SELECT`"),
        ("SELECT 1;\n  DROP TABLE t;", "line 2, column 3 with `DROP`"),
        ("SELECT 1 ; ; WITH a AS (SELECT 1) SELECT 1", "`WITH`"),
    ],
)
def test_a_second_statement_is_refused(sql: str, second: str) -> None:
    fails(sql, "more than one statement", second)


@pytest.mark.parametrize("sql", ["", "   ", "-- only a comment", "/* only */", ";"])
def test_empty_sql_is_refused(sql: str) -> None:
    found = problems(sql)
    assert found
    if sql.strip(" ") and sql != ";":
        assert any("is empty" in m for m in found), found


def test_a_keyword_hidden_by_a_backslash_in_standard_sql_is_refused() -> None:
    # With backslash escapes the literal runs to the last quote; in standard SQL it ends at `\'`
    # and DELETE is a real statement. Either way of reading it must be safe.
    sql = r"SELECT 'a\' ; DELETE FROM t; --'"
    found = fails(sql, "keyword DELETE", "more than one statement")
    assert all("backslash does not escape" in m for m in found), found


def test_a_backslash_reading_that_does_not_tokenize_is_not_held_against_the_query() -> None:
    # BigQuery text: in the standard reading the quotes never balance, so only one reading counts.
    passes(r"SELECT a FROM t WHERE name = 'O\'Brien' AND note = 'delete me'")


def test_problems_name_the_field_given() -> None:
    _, found = check_query("DROP TABLE t", "sql")
    assert {p.field for p in found} == {"sql"}
    assert found[0].as_error() == {"field": "sql", "message": found[0].message}


# --- columns ------------------------------------------------------------------------------------


def analysis(sql: str) -> sql_check.Analysis:
    result, found = check_query(sql)
    assert result is not None and found == [], found
    return result


@pytest.mark.parametrize(
    ("sql", "column"),
    [
        ("SELECT user_id FROM t", "user_id"),
        ("SELECT USER_ID FROM t", "user_id"),
        ("SELECT e.user_id FROM t e", "user_id"),
        ("SELECT created AS ts FROM t", "ts"),
        ('SELECT "Event Time" FROM t', "Event Time"),
        ("SELECT `event-ts` FROM t", "event-ts"),
        ("SELECT payload.ts FROM t", "payload.ts"),
        ("SELECT e.payload.ts FROM t e", "payload.ts"),
        ("WITH x AS (SELECT uid FROM t) SELECT uid FROM x", "uid"),
        ("SELECT a FROM t WHERE ts > 0", "ts"),
    ],
)
def test_columns_found_as_identifiers(sql: str, column: str) -> None:
    assert analysis(sql).has_identifier(column)


@pytest.mark.parametrize(
    ("sql", "column"),
    [
        ("SELECT user_id FROM t", "ts"),
        ("SELECT 'ts' AS x FROM t", "ts"),
        ("SELECT x FROM t -- ts", "ts"),
        ("SELECT x /* ts */ FROM t", "ts"),
        ("SELECT user_ids FROM t", "user_id"),
        ("SELECT a FROM t", "select"),
        ("SELECT a FROM t", "from"),
        ("SELECT payload.ts FROM t", "other.ts"),
        ("SELECT $$ts$$ FROM t", "ts"),
    ],
)
def test_columns_not_found(sql: str, column: str) -> None:
    assert not analysis(sql).has_identifier(column)


def test_missing_columns_name_the_field_and_the_column() -> None:
    found = missing_columns(
        analysis("SELECT user_id, ts FROM events"),
        [
            ("timestampColumn", "ts"),
            ("idTypeMapping[0].column", "user_id"),
            ("idTypeMapping[1].column", "device"),
        ],
    )
    assert [p.field for p in found] == ["idTypeMapping[1].column"]
    assert "'device'" in found[0].message
    assert "does not appear in sql" in found[0].message
    assert sql_check.NOT_QUERIED in found[0].message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM events",
        "SELECT DISTINCT * FROM events",
        "SELECT e.* FROM events e",
        "SELECT ts, * FROM events",
        "WITH x AS (SELECT a FROM t) SELECT * FROM x",
        "(SELECT * FROM events)",
    ],
)
def test_a_star_projection_cannot_be_checked_so_columns_pass(sql: str) -> None:
    result = analysis(sql)
    assert result.star
    assert missing_columns(result, [("timestampColumn", "anything")]) == []


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT COUNT(*) AS n FROM events",
        "SELECT a * b AS c FROM events",
        "WITH x AS (SELECT * FROM t) SELECT a FROM x",
        "SELECT a FROM (SELECT * FROM t)",
    ],
)
def test_stars_that_are_not_the_outer_projection_do_not_count(sql: str) -> None:
    result = analysis(sql)
    assert not result.star
    assert [p.field for p in missing_columns(result, [("timestampColumn", "zz")])] == ["timestampColumn"]


def test_columns_against_all_columns_ignore_case() -> None:
    found = columns_not_listed(
        ["TS", "user_id"], [("timestampColumn", "ts"), ("idTypeMapping[0].column", "uid")]
    )
    assert [p.field for p in found] == ["idTypeMapping[0].column"]
    assert "all_columns" in found[0].message


# --- tables -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("events", ("events",)),
        ("logging.events", ("logging", "events")),
        ("shoppy-sales.logging.events", ("shoppy-sales", "logging", "events")),
        ("`shoppy-sales.logging.events`", ("shoppy-sales", "logging", "events")),
        ('"My Schema"."Events"', ("my schema", "events")),
        ("proj-42.ds.t", ("proj-42", "ds", "t")),
    ],
)
def test_table_names(name: str, parts: tuple[str, ...]) -> None:
    assert table_parts(name) == parts


@pytest.mark.parametrize(
    "name", ["", "a b", "t; drop table x", "t -- x", " t", "'t'", "a..b", "a.", "(t)", "a.*"]
)
def test_not_table_names(name: str) -> None:
    assert table_parts(name) is None


@pytest.mark.parametrize(
    ("sql", "table", "reads"),
    [
        ("SELECT * FROM `shoppy-sales.logging.events`", "shoppy-sales.logging.events", True),
        ("SELECT * FROM shoppy-sales.logging.events", "shoppy-sales.logging.events", True),
        ("SELECT * FROM logging.events", "shoppy-sales.logging.events", True),
        ("SELECT * FROM prod.logging.events", "events", True),
        ("SELECT a FROM x JOIN logging.events e ON x.id = e.id", "logging.events", True),
        ('SELECT * FROM "Logging"."Events"', "logging.events", True),
        ("SELECT * FROM other.events", "logging.events", False),
        ("SELECT events FROM logs", "events", False),
        ("SELECT * FROM logs -- FROM events", "events", False),
    ],
)
def test_table_references(sql: str, table: str, reads: bool) -> None:
    parts = table_parts(table)
    assert parts is not None
    assert analysis(sql).references_table(parts) is reads


# --- expressions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    ["price * quantity", "CASE WHEN kind = 'delete' THEN 1 ELSE 0 END", "JSON_VALUE(payload, '$.a')"],
)
def test_expressions_that_pass(expression: str) -> None:
    assert check_expression(expression, "customFieldMapping[0].formula") == []


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("a; DROP TABLE t", "single expression"),
        ("a;", "single expression"),
        ("(SELECT 1 FROM t FOR UPDATE)", "keyword UPDATE"),
        ("  ", "is empty"),
        ("'open", "never closed"),
    ],
)
def test_expressions_that_fail(expression: str, fragment: str) -> None:
    found = check_expression(expression, "customFieldMapping[2].formula")
    assert found
    assert {p.field for p in found} == {"customFieldMapping[2].formula"}
    assert any(fragment in p.message for p in found), found
