"""The JSON5 and JSON Schema helpers of dynamic configs (`expconsole.services.json_values`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from expconsole.api.errors import status_of
from expconsole.errors import Invalid
from expconsole.services import json_values as jv


def refused(call: Any, *args: Any) -> Invalid:
    with pytest.raises(Invalid) as info:
        call(*args)
    assert status_of(info.value) == 400
    return info.value


def fields(error: Invalid) -> list[str]:
    return [e["field"] for e in error.errors]


# --- paths -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "parts", "expected"),
    [
        ("defaultValue", [], "defaultValue"),
        ("rules[1].returnValue", ["timeout"], "rules[1].returnValue.timeout"),
        ("x", ["a", 0, "b", 2], "x.a[0].b[2]"),
        (
            "x",
            ["has space", "dot.key", "_ok", "$ok", "9lives"],
            'x["has space"]["dot.key"]._ok.$ok["9lives"]',
        ),
        ("", ["a", 1], "a[1]"),
        ("", [], ""),
    ],
)
def test_join_path(field: str, parts: list[str | int], expected: str) -> None:
    assert jv.join_path(field, parts) == expected


# --- JSON5 ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("{a: 1 // comment\n}", {"a": 1}),
        ("{/* multi\nline */ a: 1}", {"a": 1}),
        ("{a: [1, 2,], b: {c: 3,},}", {"a": [1, 2], "b": {"c": 3}}),
        ("{unquoted: 1, $d: 2, _u: 3}", {"unquoted": 1, "$d": 2, "_u": 3}),
        ("{'k': 'single \"quoted\"'}", {"k": 'single "quoted"'}),
        ("{h: 0xFF, n: -0x10}", {"h": 255, "n": -16}),
        ("{a: .5, b: 5., c: +2}", {"a": 0.5, "b": 5.0, "c": 2}),
        ("{s: 'line\\\ncontinued'}", {"s": "linecontinued"}),
        ('{"plain": ["json", 1, true, null]}', {"plain": ["json", 1, True, None]}),
        ("[1, 'two']", [1, "two"]),
        ("'text'", "text"),
    ],
)
def test_parse_json5_reads_the_json5_grammar(text: str, value: Any) -> None:
    assert jv.parse_json5(text, "f") == value


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("{a: Infinity}", ""),
        ("{a: -Infinity}", ""),
        ("{a: +Infinity}", ""),
        ("{a: NaN}", ""),
        ("{a: -NaN}", ""),
        ("{a: {b: [0, 1e400]}}", "a.b[1]"),
        ("{a: -1e400}", "a"),
    ],
)
def test_parse_json5_refuses_numbers_json_cannot_represent(text: str, where: str) -> None:
    error = refused(jv.parse_json5, text, "defaultValueJson5")
    assert fields(error) == ["defaultValueJson5"]
    message = error.errors[0]["message"]
    assert "not representable in JSON" in message
    assert (f"(at {where})" in message) if where else "(at " not in message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{a: 1", "line 1, column 6"),
        ("{\n a: 1\n b: 2}", "line 3"),
        ("", "Empty strings"),
        ("{a: 1, a: 2}", "Duplicate key"),
        ("{a: 01}", "not valid JSON5"),
        ("{a: undefined}", "not valid JSON5"),
    ],
)
def test_parse_json5_errors_name_the_field_and_the_place(text: str, fragment: str) -> None:
    error = refused(jv.parse_json5, text, "rules[0].returnValueJson5")
    assert fields(error) == ["rules[0].returnValueJson5"]
    assert fragment in error.errors[0]["message"]
    assert error.message.startswith("rules[0].returnValueJson5: is not valid JSON5")


def test_parse_json5_depth_limit_at_its_edge() -> None:
    deepest = "{a:" * jv.MAX_DEPTH + "1" + "}" * jv.MAX_DEPTH
    assert jv.nesting_depth(deepest) == jv.MAX_DEPTH
    assert jv.parse_json5(deepest, "f") is not None
    arrays = "[" * jv.MAX_DEPTH + "]" * jv.MAX_DEPTH
    assert jv.parse_json5(arrays, "f") is not None
    for text in ("[" + arrays + "]", "{a:" + deepest + "}", "[" * 100_000):
        error = refused(jv.parse_json5, text, "f")
        assert "nests more than 32 levels" in error.errors[0]["message"]


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("{}", 1),
        ("{a: [1, {b: []}]}", 4),
        ("{a: '[[[[', b: \"{{{\"}", 1),
        ("{a: 'it\\'s [[[', b: \"\\\" {{{\"}", 1),
        ("{// [[[[\n a: 1 /* {{{{ */}", 1),
        ("[[]] [[[", 3),  # unbalanced text: the parser reports it; depth counts what opened
    ],
)
def test_nesting_depth_ignores_strings_and_comments(text: str, depth: int) -> None:
    assert jv.nesting_depth(text) == depth


# --- strict JSON ------------------------------------------------------------------------------------


def test_parse_json_is_strict() -> None:
    assert jv.parse_json('{"a": [1, 2.5, "x"]}', "schema") == {"a": [1, 2.5, "x"]}
    for text, fragment in [
        ("{a: 1}", "line 1, column 2"),
        ('{"a": 1,}', "not valid JSON"),
        ('{"a": NaN}', "not representable"),
        ('{"a": -Infinity}', "not representable"),
        ('{"a": 1e400}', "not representable"),
        ('{"a": 1, "a": 1}', "duplicate key 'a'"),
        ('{"a": 1} // c', "not valid JSON"),
    ]:
        error = refused(jv.parse_json, text, "schema")
        assert fields(error) == ["schema"], text
        assert fragment in error.errors[0]["message"], (text, error.errors)


# --- values --------------------------------------------------------------------------------------


def test_check_value_names_the_path_of_the_problem() -> None:
    jv.check_value({"a": [1, 2.5, None, True, "s", {"b": {}}]}, "defaultValue")
    error = refused(jv.check_value, {"a": [0, {"b": float("nan")}]}, "rules[2].returnValue")
    assert fields(error) == ["rules[2].returnValue.a[1].b"]
    error = refused(jv.check_value, {"x y": float("-inf")}, "v")
    assert fields(error) == ['v["x y"]']
    assert "-Infinity" in error.errors[0]["message"]


def test_check_value_depth_limit_at_its_edge() -> None:
    value: Any = 1
    for _ in range(jv.MAX_DEPTH):
        value = {"a": value}
    jv.check_value(value, "v")
    error = refused(jv.check_value, {"a": value}, "v")
    assert fields(error) == ["v" + ".a" * jv.MAX_DEPTH]


@pytest.mark.parametrize(
    ("a", "b", "where"),
    [
        ({"a": 1, "b": [1, 2]}, {"b": [1.0, 2], "a": 1.0}, None),
        ({"x": 16}, {"x": 0x10}, None),
        ({"a": True}, {"a": 1}, ("a",)),
        ({"a": 0}, {"a": False}, ("a",)),
        ({"a": None}, {"a": 0}, ("a",)),
        ({"a": "1"}, {"a": 1}, ("a",)),
        ({"a": 1}, {"a": 1, "b": 2}, ("b",)),
        ({"a": [1, 2]}, {"a": [1]}, ("a", 1)),
        ({"a": [{"b": 1}]}, {"a": [{"b": 2}]}, ("a", 0, "b")),
        ([], {}, ()),
    ],
)
def test_first_difference_follows_the_json_data_model(a: Any, b: Any, where: tuple[Any, ...] | None) -> None:
    assert jv.first_difference(a, b) == where
    assert jv.first_difference(b, a) == where
    assert jv.same_value(a, b) is (where is None)


def test_to_json5_is_json_that_round_trips() -> None:
    value = {"name": "café", "n": [1, 2.5, None, True], "deep": {"k": "v"}}
    text = jv.to_json5(value)
    assert json.loads(text) == value
    assert jv.parse_json5(text, "f") == value
    assert "café" in text  # not escaped
    assert jv.to_json5({}) == "{}"
    assert jv.to_json({"a": [1, 2]}) == '{"a":[1,2]}'


def test_resolve_object_from_either_form_or_both() -> None:
    assert jv.resolve_object(None, None, "defaultValue", "defaultValueJson5") is None
    value, text = jv.resolve_object({"a": 1}, None, "defaultValue", "defaultValueJson5")  # type: ignore[misc]
    assert value == {"a": 1} and json.loads(text) == {"a": 1}
    source = "{a: 1, // kept\n}"
    assert jv.resolve_object(None, source, "defaultValue", "defaultValueJson5") == ({"a": 1}, source)
    assert jv.resolve_object({"a": 1.0}, source, "defaultValue", "defaultValueJson5") == ({"a": 1.0}, source)


def test_resolve_object_refusals_name_the_field() -> None:
    error = refused(
        jv.resolve_object, {"a": 1}, "{a: 2}", "rules[0].returnValue", "rules[0].returnValueJson5"
    )
    assert fields(error) == ["rules[0].returnValueJson5"]
    assert "rules[0].returnValue.a" in error.errors[0]["message"]
    error = refused(jv.resolve_object, None, "[1]", "defaultValue", "defaultValueJson5")
    assert fields(error) == ["defaultValueJson5"] and "an array" in error.errors[0]["message"]
    error = refused(jv.resolve_object, {"a": float("inf")}, None, "defaultValue", "defaultValueJson5")
    assert fields(error) == ["defaultValue.a"]


# --- JSON Schema -------------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {
        "timeout": {"type": "string"},
        "limits": {"type": "array", "items": {"type": "integer", "minimum": 0}},
        "odd key": {"type": "boolean"},
    },
    "required": ["timeout"],
}


def test_schema_violations_are_named_by_path_in_order() -> None:
    validator = jv.compile_schema(SCHEMA)
    value = {"limits": [1, -2, "x"], "odd key": 1}
    problems = jv.schema_violations(validator, value, "rules[1].returnValue")
    assert problems == sorted(problems, key=lambda p: (p["field"], p["message"]))
    by_field = {p["field"]: p["message"] for p in problems}
    assert by_field == {
        "rules[1].returnValue": "'timeout' is a required property",
        "rules[1].returnValue.limits[1]": "-2 is less than the minimum of 0",
        "rules[1].returnValue.limits[2]": "'x' is not of type 'integer'",
        'rules[1].returnValue["odd key"]': "1 is not of type 'boolean'",
    }
    assert jv.schema_violations(validator, {"timeout": "5s"}, "v") == []


def test_validate_all_raises_one_400_for_every_site() -> None:
    validator = jv.compile_schema(SCHEMA)
    jv.validate_all(validator, [("defaultValue", {"timeout": "1s"})])
    error = refused(
        jv.validate_all,
        validator,
        [("defaultValue", {"timeout": "1s"}), ("rules[1].returnValue", {"timeout": 5})],
    )
    assert error.message == "rules[1].returnValue.timeout: 5 is not of type 'string'"
    assert fields(error) == ["rules[1].returnValue.timeout"]
    sites = [(f"rules[{i}].returnValue", {"timeout": i}) for i in range(50)]
    error = refused(jv.validate_all, validator, sites)
    assert len(error.errors) == jv.MAX_ERRORS
    assert fields(error)[:2] == ["rules[0].returnValue.timeout", "rules[1].returnValue.timeout"]


def test_long_messages_are_shortened() -> None:
    validator = jv.compile_schema({"type": "object", "properties": {"s": {"type": "integer"}}})
    [problem] = jv.schema_violations(validator, {"s": "x" * 10_000}, "v")
    assert len(problem["message"]) == jv.MAX_MESSAGE_CHARS and problem["message"].endswith("…")


def test_dialect_comes_from_dollar_schema_and_defaults_to_2020_12() -> None:
    from jsonschema import Draft4Validator, Draft7Validator, Draft202012Validator

    assert isinstance(jv.compile_schema({"type": "object"}), Draft202012Validator)
    assert isinstance(jv.compile_schema(True), Draft202012Validator)
    for uri, cls in [
        ("http://json-schema.org/draft-07/schema#", Draft7Validator),
        ("http://json-schema.org/draft-07/schema", Draft7Validator),
        ("https://json-schema.org/draft-07/schema#", Draft7Validator),
        ("http://json-schema.org/draft-04/schema#", Draft4Validator),
        ("https://json-schema.org/draft/2020-12/schema", Draft202012Validator),
    ]:
        assert isinstance(jv.compile_schema({"$schema": uri}), cls), uri
    # A tuple `items` is draft-07 only; draft-04's boolean exclusiveMaximum is draft-04 only.
    tuple_items = {"items": [{"type": "string"}]}
    refused(jv.compile_schema, tuple_items)
    draft7 = jv.compile_schema({"$schema": "http://json-schema.org/draft-07/schema#", **tuple_items})
    assert jv.schema_violations(draft7, [1], "v") == [
        {"field": "v[0]", "message": "1 is not of type 'string'"}
    ]
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 5, "exclusiveMaximum": True}
    assert jv.schema_violations(jv.compile_schema(draft4), 5, "v")[0]["field"] == "v"
    refused(jv.compile_schema, {"maximum": 5, "exclusiveMaximum": True})


@pytest.mark.parametrize(
    ("schema", "fragment"),
    [
        ({"$schema": "http://example.com/my-dialect"}, "unknown $schema"),
        ({"$schema": 7}, "$schema must be a string"),
        ({"type": "nope"}, "not a valid JSON Schema at type"),
        ({"properties": {"a": {"pattern": "(unclosed"}}}, "at properties.a.pattern"),
        ({"required": "timeout"}, "not a valid JSON Schema"),
        ("a string", "not string"),
        ([], "not array"),
    ],
)
def test_invalid_schemas_are_400s_naming_the_field(schema: Any, fragment: str) -> None:
    error = refused(jv.compile_schema, schema, "schemaJson5")
    assert fields(error) == ["schemaJson5"]
    assert fragment in error.errors[0]["message"]


def test_unresolvable_refs_are_400s() -> None:
    remote = jv.compile_schema({"$ref": "https://example.com/schema.json"})
    error = refused(jv.schema_violations, remote, {}, "defaultValue")
    assert fields(error) == ["schema"] and "never fetched" in error.errors[0]["message"]
    local = jv.compile_schema({"$ref": "#/$defs/missing"})
    error = refused(jv.schema_violations, local, {}, "defaultValue")
    assert "cannot resolve $ref" in error.errors[0]["message"]
    defined = jv.compile_schema(
        {"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s"}}}
    )
    assert jv.schema_violations(defined, {"a": 1}, "v") == [
        {"field": "v.a", "message": "1 is not of type 'string'"}
    ]


def test_ref_loops_are_400s() -> None:
    for schema in ({"$ref": "#"}, {"allOf": [{"$ref": "#"}]}):
        error = refused(jv.schema_violations, jv.compile_schema(schema), {"a": 1}, "v")
        assert fields(error) == ["schema"] and "$ref loop" in error.errors[0]["message"]
    recursive = jv.compile_schema({"properties": {"child": {"$ref": "#"}, "n": {"type": "integer"}}})
    assert fields_of(jv.schema_violations(recursive, {"child": {"child": {"n": "x"}}}, "v")) == [
        "v.child.child.n"
    ]


def fields_of(problems: list[dict[str, str]]) -> list[str]:
    return [p["field"] for p in problems]


def test_format_is_an_annotation() -> None:
    validator = jv.compile_schema({"properties": {"e": {"type": "string", "format": "email"}}})
    assert jv.schema_violations(validator, {"e": "not an email"}, "v") == []


def test_resolve_schema_forms() -> None:
    assert jv.resolve_schema(None, None) is None
    value, text, text5 = jv.resolve_schema('{ "type" : "object" }', None)  # type: ignore[misc]
    assert (value, text) == ({"type": "object"}, '{"type":"object"}') and json.loads(text5) == value
    source = "{type: 'object', // comment\n}"
    assert jv.resolve_schema(None, source) == ({"type": "object"}, '{"type":"object"}', source)
    assert jv.resolve_schema('{"type":"object"}', source) == ({"type": "object"}, '{"type":"object"}', source)
    error = refused(jv.resolve_schema, '{"type":"object"}', "{type: 'array'}")
    assert fields(error) == ["schemaJson5"] and "schema.type" in error.errors[0]["message"]
    assert fields(refused(jv.resolve_schema, "{type: 'object'}", None)) == ["schema"]
    assert fields(refused(jv.resolve_schema, None, "{type: 'nope'}")) == ["schemaJson5"]
    assert fields(refused(jv.resolve_schema, '{"type": "nope"}', None)) == ["schema"]


def test_helpers_import_json5_and_jsonschema_only_when_used() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from expconsole.services import json_values, dynamic_configs; "
        "print(sorted(m for m in ('json5', 'jsonschema') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
