"""What can be checked about a warehouse source's SQL without a warehouse.

A small tokenizer splits the text into words, numbers, punctuation, string literals and quoted
identifiers, skipping whitespace and comments, so that a keyword inside `'...'`, `"..."`,
`` `...` ``, `$$...$$`, `-- ...` or `/* ... */` is never mistaken for code. On its tokens:

- the SQL is one statement (a trailing `;` is fine, a second statement is not);
- it is read-only: it starts with SELECT or WITH (after comments and opening parentheses) and
  holds none of the writing keywords in `FORBIDDEN` outside literals, quoted identifiers and
  comments (a word right after `.` is a qualified name, not a keyword);
- the columns a source names appear in it as identifiers (`Analysis.has_identifier`), and a
  table source's table appears in it (`Analysis.references_table`).

Dialects disagree on whether a backslash escapes a quote inside a literal (BigQuery, Snowflake,
Databricks and Redshift say yes; standard SQL, Postgres and Trino say no). The text is read
both ways: the columns come from the backslash reading, and the safety checks must pass under
every reading that tokenizes, so a writing keyword cannot hide behind `\\'` in either dialect.
Block comments do not nest, for the same reason: reading `/* /* */ DROP ... */` as nested
would hide a DROP from dialects that do not nest them.

Nothing here queries a warehouse: a column the SQL takes from `SELECT *` cannot be checked,
and `Analysis.star` says so.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

WORD = "word"
QUOTED = "quoted"  # a quoted identifier: "..." or `...`
STRING = "string"  # a string literal: '...' or $tag$...$tag$
NUMBER = "number"
PUNCT = "punct"

NOT_QUERIED = "checked from the SQL text alone; the warehouse itself was not queried"

# Writing or privileged statements and clauses: none of them belongs in a read-only query.
FORBIDDEN = frozenset(
    {
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "UPSERT",
        "CREATE",
        "DROP",
        "ALTER",
        "TRUNCATE",
        "RENAME",
        "GRANT",
        "REVOKE",
        "COPY",
        "UNLOAD",
        "CALL",
        "EXEC",
        "EXECUTE",
        "INTO",
        "VACUUM",
    }
)
STARTS = frozenset({"SELECT", "WITH"})

# Structural keywords, which never count as a column's name.
RESERVED = frozenset(
    {
        "SELECT",
        "FROM",
        "WHERE",
        "WITH",
        "RECURSIVE",
        "AS",
        "AND",
        "OR",
        "NOT",
        "ON",
        "USING",
        "JOIN",
        "LEFT",
        "RIGHT",
        "INNER",
        "OUTER",
        "FULL",
        "CROSS",
        "LATERAL",
        "GROUP",
        "BY",
        "ORDER",
        "HAVING",
        "QUALIFY",
        "LIMIT",
        "OFFSET",
        "UNION",
        "INTERSECT",
        "EXCEPT",
        "ALL",
        "DISTINCT",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "IN",
        "IS",
        "NULL",
        "LIKE",
        "BETWEEN",
        "EXISTS",
        "OVER",
        "PARTITION",
        "WINDOW",
        "ASC",
        "DESC",
        "TRUE",
        "FALSE",
        "VALUES",
    }
    | FORBIDDEN
)

_DOLLAR_TAG = re.compile(r"\$(?:[A-Za-z_][A-Za-z0-9_]*)?\$")
_STAR_BEFORE = frozenset({"SELECT", "DISTINCT", "ALL"})


@dataclass(frozen=True)
class Token:
    kind: str
    text: str  # as written
    value: str  # words as written, the unescaped content of literals and quoted identifiers
    start: int
    end: int

    def is_punct(self, char: str) -> bool:
        return self.kind == PUNCT and self.text == char

    def is_word(self, *words: str) -> bool:
        return self.kind == WORD and self.value.upper() in words


@dataclass(frozen=True)
class Problem:
    """One thing wrong, about one request field (`sql`, `timestampColumn`, ...)."""

    field: str
    message: str

    def as_error(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


class SqlSyntaxError(ValueError):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def tokenize(sql: str, *, backslash_escapes: bool = True) -> list[Token]:
    """The tokens of `sql`, without whitespace and comments; SqlSyntaxError if a literal,
    quoted identifier or block comment is never closed."""
    tokens: list[Token] = []
    i, n = 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch.isspace():
            i += 1
        elif sql.startswith("--", i):
            newline = sql.find("\n", i)
            i = n if newline < 0 else newline + 1
        elif sql.startswith("/*", i):
            close = sql.find("*/", i + 2)
            if close < 0:
                raise SqlSyntaxError("a /* comment is never closed", i)
            i = close + 2
        elif ch in "'\"`":
            end, value = _quoted(sql, i, backslash_escapes)
            tokens.append(Token(STRING if ch == "'" else QUOTED, sql[i:end], value, i, end))
            i = end
        elif ch == "$" and (tag := _DOLLAR_TAG.match(sql, i)):
            close = sql.find(tag.group(0), tag.end())
            if close < 0:
                raise SqlSyntaxError(f"a {tag.group(0)}-quoted string is never closed", i)
            end = close + len(tag.group(0))
            tokens.append(Token(STRING, sql[i:end], sql[tag.end() : close], i, end))
            i = end
        elif ch.isalpha() or ch == "_":
            j = i + 1
            while j < n and (sql[j].isalnum() or sql[j] in "_$"):
                j += 1
            tokens.append(Token(WORD, sql[i:j], sql[i:j], i, j))
            i = j
        elif ch.isdigit():
            j = i + 1
            while j < n and (sql[j].isalnum() or sql[j] in "_."):
                j += 1
            tokens.append(Token(NUMBER, sql[i:j], sql[i:j], i, j))
            i = j
        else:
            tokens.append(Token(PUNCT, ch, ch, i, i + 1))
            i += 1
    return tokens


def _quoted(sql: str, start: int, backslash_escapes: bool) -> tuple[int, str]:
    """End offset and content of the literal or quoted identifier opened at `start`."""
    quote = sql[start]
    out: list[str] = []
    i, n = start + 1, len(sql)
    while i < n:
        ch = sql[i]
        if backslash_escapes and ch == "\\" and i + 1 < n:
            out.append(sql[i + 1])
            i += 2
        elif ch == quote:
            if i + 1 < n and sql[i + 1] == quote:  # a doubled quote stands for itself
                out.append(quote)
                i += 2
            else:
                return i + 1, "".join(out)
        else:
            out.append(ch)
            i += 1
    what = "string literal" if quote == "'" else "quoted identifier"
    raise SqlSyntaxError(f"a {what} opened with {quote} is never closed", start)


def where(text: str, position: int) -> str:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}"


def _describe(token: Token) -> str:
    shown = token.text if len(token.text) <= 40 else token.text[:37] + "..."
    return f"`{shown}`"


# --- analysis -----------------------------------------------------------------------------------


@dataclass
class Analysis:
    """What the SQL text tells about its columns and tables (its first statement)."""

    names: set[str] = field(default_factory=set)  # identifiers, lower case
    chains: list[tuple[str, ...]] = field(default_factory=list)  # dotted names, lower-case parts
    tables: list[tuple[str, ...]] = field(default_factory=list)  # dotted names after FROM or JOIN
    star: bool = False  # the outer query selects `*` (or `t.*`): its columns are unknown

    def has_identifier(self, column: str) -> bool:
        """Whether `column` appears as an identifier (any case; `a.b` as a qualified name)."""
        wanted = column.lower()
        if wanted in self.names:
            return True
        parts = tuple(wanted.split("."))
        return len(parts) > 1 and any(_ends_with(chain, parts) for chain in self.chains)

    def references_table(self, table: tuple[str, ...]) -> bool:
        """Whether the SQL reads `table` (a name after FROM or JOIN), with or without leading
        qualifiers (`events` matches `prod.logging.events` and the other way round)."""
        return any(_ends_with(name, table) or _ends_with(table, name) for name in self.tables)


def _ends_with(longer: tuple[str, ...], shorter: tuple[str, ...]) -> bool:
    return len(longer) >= len(shorter) and longer[len(longer) - len(shorter) :] == shorter


def _chains(tokens: list[Token]) -> list[tuple[tuple[str, ...], Token | None]]:
    """Dotted names, each with the token before it: runs of identifiers joined by `.` (and `-`
    and digits, as in BigQuery's `my-project-42.dataset.table`) with nothing between them."""
    out: list[tuple[tuple[str, ...], Token | None]] = []
    run: list[Token] = []
    before: Token | None = None

    def close() -> None:
        if run:
            parts = [""]
            for token in run:
                if token.is_punct("."):
                    parts.append("")
                elif token.kind in (QUOTED, NUMBER):
                    pieces = token.value.lower().split(".")
                    parts[-1] += pieces[0]
                    parts.extend(pieces[1:])
                else:
                    parts[-1] += token.value.lower()
            if all(parts) and any(t.kind in (WORD, QUOTED) for t in run):
                out.append((tuple(parts), before))
            run.clear()

    previous: Token | None = None
    for token in tokens:
        joinable = token.kind in (WORD, QUOTED, NUMBER) or token.is_punct(".") or token.is_punct("-")
        if not (joinable and run and run[-1].end == token.start):
            close()
            before = previous
        if joinable:
            run.append(token)
        previous = token
    close()
    return out


def _first_statement(tokens: list[Token]) -> list[Token]:
    for index, token in enumerate(tokens):
        if token.is_punct(";"):
            return tokens[:index]
    return tokens


def _leading_parens(tokens: list[Token]) -> int:
    count = 0
    while count < len(tokens) and tokens[count].is_punct("("):
        count += 1
    return count


def _outer_star(tokens: list[Token]) -> bool:
    """A `*` projection at the outer query's level (not `count(*)`, not `a * b`)."""
    outer = _leading_parens(tokens)
    depth = 0
    previous: Token | None = None
    before_previous: Token | None = None
    for token in tokens:
        if token.is_punct("("):
            depth += 1
        elif token.is_punct(")"):
            depth -= 1
        elif token.is_punct("*") and depth <= outer and previous is not None:
            if previous.is_word(*_STAR_BEFORE) or previous.is_punct(","):
                return True
            qualified = before_previous is not None and before_previous.kind in (WORD, QUOTED)
            if previous.is_punct(".") and qualified:
                return True
        before_previous, previous = previous, token
    return False


def analyse(tokens: list[Token]) -> Analysis:
    statement = _first_statement(tokens)
    names = {
        t.value.lower()
        for t in statement
        if t.kind == QUOTED or (t.kind == WORD and t.value.upper() not in RESERVED)
    }
    chains = _chains(statement)
    return Analysis(
        names=names,
        chains=[chain for chain, _ in chains],
        tables=[chain for chain, before in chains if before is not None and before.is_word("FROM", "JOIN")],
        star=_outer_star(statement),
    )


# --- checks -------------------------------------------------------------------------------------


def _safety(tokens: list[Token], text: str, *, query: bool) -> list[str]:
    """Why these tokens are not one read-only statement (a query, or an expression)."""
    problems: list[str] = []
    if not tokens:
        return ["is empty: it holds only whitespace and comments"]
    for index, token in enumerate(tokens):
        if not token.is_punct(";"):
            continue
        rest = [t for t in tokens[index + 1 :] if not t.is_punct(";")]
        if not query:
            problems.append(f"must be a single expression, but has `;` at {where(text, token.start)}")
        elif rest:
            problems.append(
                f"holds more than one statement: a second one starts at {where(text, rest[0].start)} "
                f"with {_describe(rest[0])}; send a single query (a trailing `;` is fine)"
            )
        break
    if query:
        first = tokens[_leading_parens(tokens)] if _leading_parens(tokens) < len(tokens) else tokens[-1]
        if not first.is_word(*STARTS):
            problems.append(
                f"must be a read-only query starting with SELECT or WITH (after comments), but it "
                f"starts with {_describe(first)} at {where(text, first.start)}"
            )
    seen: set[str] = set()
    for index, token in enumerate(tokens):
        keyword = token.value.upper()
        if token.kind != WORD or keyword not in FORBIDDEN or keyword in seen:
            continue
        if index > 0 and tokens[index - 1].is_punct("."):
            continue  # `schema.delete` is a qualified name
        seen.add(keyword)
        problems.append(
            f"contains the keyword {keyword} at {where(text, token.start)}: a source must be "
            "read-only, so writing keywords (INSERT, UPDATE, DELETE, MERGE, CREATE, DROP, ALTER, "
            "GRANT, COPY, CALL, ...) may appear only inside string literals, quoted identifiers "
            "and comments"
        )
    return problems


def _checked(text: str, field: str, *, query: bool) -> tuple[list[Token] | None, list[Problem]]:
    """Tokens (backslash reading) and the safety problems under every reading that tokenizes."""
    try:
        tokens = tokenize(text, backslash_escapes=True)
    except SqlSyntaxError as exc:
        return None, [Problem(field, f"{exc.message} (opened at {where(text, exc.position)}); {NOT_QUERIED}")]
    messages = _safety(tokens, text, query=query)
    try:
        standard = tokenize(text, backslash_escapes=False)
    except SqlSyntaxError:
        standard = None
    if standard is not None and standard != tokens:
        for message in _safety(standard, text, query=query):
            if message not in messages:
                messages.append(f"{message} (when a backslash does not escape a quote, as in standard SQL)")
    return tokens, [Problem(field, f"{message}; {NOT_QUERIED}") for message in messages]


def check_query(sql: str, field: str = "sql") -> tuple[Analysis | None, list[Problem]]:
    """The analysis of a source's SQL and what is wrong with it (empty when it passes)."""
    tokens, problems = _checked(sql, field, query=True)
    return (analyse(tokens) if tokens is not None else None), problems


def check_expression(expression: str, field: str) -> list[Problem]:
    """A SQL expression (a custom field's formula): one expression, no writing keywords."""
    return _checked(expression, field, query=False)[1]


def missing_columns(
    analysis: Analysis, columns: Iterable[tuple[str, str]], sql_field: str = "sql"
) -> list[Problem]:
    """The named columns (`(field, column)` pairs) that do not appear in the SQL.

    Nothing is missing when the outer query selects `*`: its columns are the warehouse's to say.
    """
    if analysis.star:
        return []
    return [
        Problem(
            name,
            f"column {column!r} does not appear in {sql_field} as an identifier; "
            f"name it in the query (e.g. `SELECT {column} ...` or `... AS {column}`); {NOT_QUERIED}",
        )
        for name, column in columns
        if not analysis.has_identifier(column)
    ]


def columns_not_listed(
    listed: Iterable[str], columns: Iterable[tuple[str, str]], list_field: str = "all_columns"
) -> list[Problem]:
    """With skip_validation the columns are checked against the list the client gave."""
    known = {column.lower() for column in listed}
    return [
        Problem(
            name,
            f"column {column!r} is not one of {list_field} (with skip_validation, columns are "
            f"checked against {list_field} instead of the SQL; the warehouse itself was not queried)",
        )
        for name, column in columns
        if column.lower() not in known
    ]


def table_parts(table_name: str) -> tuple[str, ...] | None:
    """`project.dataset.table` (quoted parts allowed) as lower-case parts; None if it is not
    a table name."""
    try:
        tokens = tokenize(table_name, backslash_escapes=False)
    except SqlSyntaxError:
        return None
    if not tokens or any(t.kind not in (WORD, QUOTED, NUMBER) and t.text not in (".", "-") for t in tokens):
        return None
    if tokens[0].start != 0 or tokens[-1].end != len(table_name):
        return None  # surrounding whitespace or a comment
    if any(a.end != b.start for a, b in itertools.pairwise(tokens)):
        return None
    chains = _chains(tokens)
    return chains[0][0] if len(chains) == 1 else None
