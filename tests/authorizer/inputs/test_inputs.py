"""Unit tests of `authorizer.inputs.validate`: strict JSON, Kafka's limits and enum rules, ACL/filter/request objects.

The property tests feed random JSON values and random bytes: the only exception ever raised is InputError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kraftacl.authorizer.decision.config import load_properties, parse_node_id
from kraftacl.authorizer.errors import ConfigError
from kraftacl.authorizer.inputs import validate as inputs_module
from kraftacl.authorizer.inputs.validate import (
    MAX_DEPTH,
    MAX_STRING_BYTES,
    InputError,
    check_string,
    loads_strict,
    parse_acl,
    parse_acls,
    parse_enum,
    parse_filter,
    parse_request,
    parse_requests,
)
from kraftacl.authorizer.model.acls import AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from kraftacl.authorizer.model.filters import AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter

ACL: dict[str, Any] = {
    "resource_type": "TOPIC",
    "resource_name": "orders",
    "pattern_type": "LITERAL",
    "principal": "User:alice",
    "host": "*",
    "operation": "READ",
    "permission_type": "ALLOW",
}
AUTHORIZE: dict[str, Any] = {
    "principal": "User:alice",
    "host": "10.0.0.1",
    "operation": "READ",
    "resource_type": "TOPIC",
    "resource_name": "orders",
}


def refused(call: Any, *args: Any) -> InputError:
    with pytest.raises(InputError) as info:
        call(*args)
    return info.value


# ---- strict JSON -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path", "reason"),
    [
        ('[{"a": 1, "a": 2}]', (0,), "duplicate key 'a'"),
        ('{"x": {"y": [1, {"k": 1, "k": 1}]}}', ("x", "y", 1), "duplicate key 'k'"),
        ('{"x": NaN}', ("x",), "NaN is not a JSON number"),
        ('{"x": [Infinity]}', ("x", 0), "Infinity is not a JSON number"),
        ('{"x": -Infinity}', ("x",), "-Infinity is not a JSON number"),
        ('{"x": 1e999}', ("x",), "1e999 is not finite"),
        ('{"x": 9223372036854775808}', ("x",), "outside Java's long range"),
        ('{"x": -9223372036854775809}', ("x",), "outside Java's long range"),
        ('{"x": ' + "9" * 5000 + "}", ("x",), "outside Java's long range"),
    ],
)
def test_strict_json_names_the_offending_value(text: str, path: tuple[Any, ...], reason: str) -> None:
    error = refused(loads_strict, text)
    assert error.field_path == path and reason in error.reason


def test_strict_json_accepts_the_limits_themselves() -> None:
    assert loads_strict('[9223372036854775807, -9223372036854775808, 1.5e308, "\\u2028"]') == [
        2**63 - 1,
        -(2**63),
        1.5e308,
        "\u2028",
    ]
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads_strict(nested) is not None
    assert loads_strict(b'{"a": "\xc3\xa9"}') == {"a": "\u00e9"}


def test_strict_json_refuses_deep_nesting() -> None:
    for depth in (MAX_DEPTH + 1, 500, 100_000):  # the last is stopped by the parser's own recursion limit
        error = refused(loads_strict, "[" * depth + "]" * depth)
        assert error.reason == "JSON nested more than 64 levels deep" and error.field_path == ()
    assert refused(loads_strict, '{"a": [{"b": ' + "[" * 70 + "]" * 70 + "}]}").reason.startswith("JSON nested")
    mixed = '{"k": "v", "n": [1, "x", null, ' * 40 + "{}" + "]}" * 40  # scalars beside containers, 81 deep
    assert refused(loads_strict, mixed).reason.startswith("JSON nested")
    assert loads_strict('{"k": "v", "n": [1, "x", null, ' * 31 + "{}" + "]}" * 31) is not None  # 63 levels
    brackets_in_strings = json.dumps(["[" * 1000, "{" * 1000])  # brackets inside strings do not count
    assert loads_strict(brackets_in_strings) == ["[" * 1000, "{" * 1000]


def test_strict_json_syntax_and_encoding_errors_say_where() -> None:
    assert refused(loads_strict, "[1,\n  2,,]").reason == "not valid JSON: Expecting value at line 2 column 5"
    assert refused(loads_strict, b'["ok", "\xff"]').reason == "not UTF-8 text: byte 0xff at offset 8"


# ---- strings and enums ----------------------------------------------------------------------------------------


def test_strings_are_limited_to_kafkas_32767_utf8_bytes() -> None:
    assert check_string("x" * MAX_STRING_BYTES) == "x" * MAX_STRING_BYTES
    assert "32768 UTF-8 bytes, over Kafka's limit of 32767" in refused(check_string, "x" * 32768).reason
    assert check_string("\u00e9" * 16383)  # 32766 bytes
    assert "32768 UTF-8 bytes" in refused(check_string, "\u00e9" * 16384).reason  # 16384 characters, 32768 bytes
    assert "lone surrogate '\\ud800' at character 1" in refused(check_string, "a\ud800").reason
    assert refused(check_string, 5).reason == "expected a string, got the number 5"


@pytest.mark.parametrize(
    ("cls", "text", "expected"),
    [
        (ResourceType, "transactional_id", ResourceType.TRANSACTIONAL_ID),
        (ResourceType, "Topic", ResourceType.TOPIC),
        (AclOperation, "describe_configs", AclOperation.DESCRIBE_CONFIGS),
        (AclPermissionType, "allow", AclPermissionType.ALLOW),
        (PatternType, "PREFIXED", PatternType.PREFIXED),
        (PatternType, "UNKNOWN", PatternType.UNKNOWN),
        (AclOperation, "unknown", AclOperation.UNKNOWN),
        (ResourceType, 2, ResourceType.TOPIC),
        (PatternType, 4, PatternType.PREFIXED),
    ],
)
def test_enum_names_as_kafkas_from_string_accepts_them(cls: Any, text: Any, expected: Any) -> None:
    assert parse_enum(cls, text) is expected


@pytest.mark.parametrize(
    ("cls", "value", "reason"),
    [
        (PatternType, "prefixed", "PatternType names are case-sensitive in Kafka: PREFIXED"),
        (AclOperation, "DescribeConfigs", "'DescribeConfigs' is not one of UNKNOWN, ANY, ALL, READ"),
        (ResourceType, 8, "8 is not a code of ResourceType (0..7"),
        (ResourceType, -1, "-1 is not a code of ResourceType"),
        (AclPermissionType, True, "got a boolean"),
        (AclPermissionType, None, "got null"),
        (AclPermissionType, 3.0, "got the number 3.0"),
    ],
)
def test_enum_values_kafka_would_turn_into_unknown_are_refused(cls: Any, value: Any, reason: str) -> None:
    assert reason in refused(parse_enum, cls, value).reason


# ---- objects --------------------------------------------------------------------------------------------------


def test_an_acl_object() -> None:
    assert parse_acl(ACL) == StandardAcl(
        ResourceType.TOPIC,
        "orders",
        PatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    lower = {**ACL, "resource_type": "topic", "operation": "read", "permission_type": "allow"}
    assert parse_acl(lower) == parse_acl(ACL)


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        (
            {"resourceType": "TOPIC"},
            "resourceType",
            "unknown field; an ACL has the fields resource_type, resource_name",
        ),
        ({"pattern_type": "literal"}, "pattern_type", "case-sensitive in Kafka: LITERAL"),
        ({"resource_name": 7}, "resource_name", "expected a string, got the number 7"),
        ({"host": None}, "host", "expected a string, got null"),
        ({"principal": "User:" + "a" * MAX_STRING_BYTES}, "principal", "32772 UTF-8 bytes"),
        ({"operation": 99}, "operation", "99 is not a code of AclOperation"),
    ],
)
def test_a_bad_acl_field_is_named(change: dict[str, Any], field: str, reason: str) -> None:
    error = refused(parse_acl, {**ACL, **change})
    assert error.field == field and reason in error.reason, error


def test_a_missing_acl_field_is_named() -> None:
    error = refused(parse_acl, {k: v for k, v in ACL.items() if k != "permission_type"})
    assert (error.field, error.reason) == ("permission_type", "is required")
    assert refused(parse_acl, [ACL]).reason == "expected an ACL (a JSON object), got an array"


def test_a_filter_object() -> None:
    assert parse_filter({}) == AclBindingFilter(ResourcePatternFilter(), AccessControlEntryFilter())
    got = parse_filter({"resource_type": "topic", "pattern_type": "MATCH", "principal": None, "host": "*"})
    assert got.pattern == ResourcePatternFilter(ResourceType.TOPIC, None, PatternType.MATCH)
    assert got.entry.host == "*" and got.entry.principal is None
    assert refused(parse_filter, {"name": "x"}).field == "name"


def test_requests_take_the_fields_of_their_kind() -> None:
    request = parse_request({**AUTHORIZE, "id": "V1", "why": "a comment"})
    assert request.kind == "authorize" and request.operation is AclOperation.READ and request.pattern_type is None
    assert parse_request({**AUTHORIZE, "pattern_type": "PREFIXED"}).pattern_type is PatternType.PREFIXED
    describe = parse_request({"kind": "describe", "filter": {"resource_type": "GROUP"}})
    assert describe.filter is not None and describe.filter.resource_type is ResourceType.GROUP
    cases = [
        ({**AUTHORIZE, "filter": {}}, "filter", "unknown field; a request of kind 'authorize' has the fields"),
        ({**AUTHORIZE, "kind": "by_resource_type"}, "resource_name", "unknown field; a request of kind"),
        ({**AUTHORIZE, "kind": "describe"}, "principal", "unknown field"),
        ({"kind": "describe", "filter": {"pattern": "x"}}, "filter.pattern", "unknown field; a filter has"),
        ({"kind": "describe", "filter": []}, "filter", "expected a filter (a JSON object), got an array"),
        ({"kind": "Describe"}, "kind", "expected one of authorize, by_resource_type"),
        ({k: v for k, v in AUTHORIZE.items() if k != "host"}, "host", "is required for kind 'authorize'"),
        ({**AUTHORIZE, "host": "localhost"}, "host", "'localhost' is not an IP address"),
        ({**AUTHORIZE, "principal": "alice"}, "principal", "not a principal of the form Type:name"),
        ({**AUTHORIZE, "operation": "Read "}, "operation", "'Read ' is not one of"),
    ]
    for obj, field, reason in cases:
        error = refused(parse_request, obj)
        assert error.field == field and reason in error.reason, (obj, error)


def test_file_errors_name_the_source_the_element_or_line_and_the_field() -> None:
    acls = json.dumps([ACL, {**ACL, "operation": "READS"}])
    assert str(refused(parse_acls, acls, "acls.json")).startswith(
        "acls.json: element 1: field 'operation': 'READS' is not one of"
    )
    assert str(refused(parse_acls, '[{"a": 1, "a": 1}]', "f")) == "f: element 0: duplicate key 'a' in one object"
    assert str(refused(parse_acls, "{}", "f")) == "f: expected a JSON array of ACL objects, got an object"
    lines = f"{json.dumps(AUTHORIZE)}\n\n{json.dumps({**AUTHORIZE, 'host': 'x'})}\n"
    assert str(refused(parse_requests, lines, "r.jsonl")).startswith("r.jsonl: line 3: field 'host': 'x' is not an IP")
    assert str(refused(parse_requests, b"\n\xfe", "r")) == "r: not UTF-8 text: byte 0xfe at offset 1"


def test_a_line_separator_inside_a_string_does_not_split_a_request_line() -> None:
    line = json.dumps({**AUTHORIZE, "resource_name": "a\u2028b\x1cc"}, ensure_ascii=False)
    [(number, request)] = parse_requests(line + "\r\n", "r")
    assert number == 1 and request.resource_name == "a\u2028b\x1cc"


def test_an_error_can_be_placed_inside_an_api_body() -> None:
    error = refused(parse_acl, {**ACL, "operation": "nope"}).inside("acls", 3).at("POST /acls")
    assert error.field == "acls[3].operation"
    assert str(error).startswith("POST /acls: field 'acls[3].operation': 'nope' is not one of")


# ---- properties files -------------------------------------------------------------------------------------------


def test_properties_keys_and_values_obey_kafkas_string_limit(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("a=1\n# comment\nb = 2 \\\n   3\nbig=" + "x" * 32768 + "\n")
    with pytest.raises(ConfigError, match=r"server\.properties: line 5: key 'big': 32768 UTF-8 bytes"):
        load_properties(path)
    path.write_text("a=1\nb=\\ud800\n")
    with pytest.raises(ConfigError, match=r"line 2: key 'b': not valid Unicode: a lone surrogate"):
        load_properties(path)
    path.write_bytes(b"a=\xff\n")
    with pytest.raises(ConfigError, match="not UTF-8 text: byte 0xff at offset 2"):
        load_properties(path)
    path.write_text("a=1\nb=\\uZZZZ\n")
    with pytest.raises(ConfigError, match=r"line 2: not a valid properties file: Invalid \\u escape"):
        load_properties(path)
    path.write_text("k=v\nk=w\nlong=" + "x" * 32767 + "\n")
    assert load_properties(path) == {"k": "w", "long": "x" * 32767}  # the last value wins, as in Java


@pytest.mark.parametrize(
    ("text", "node_id"),
    [("7", 7), ("+7", 7), ("-2147483648", -(2**31)), ("2147483647", 2**31 - 1), ("2147483648", -1), ("1_0", -1)],
)
def test_node_id_is_parsed_like_integer_parse_int(text: str, node_id: int) -> None:
    assert parse_node_id(text) == node_id


# ---- nothing but InputError, whatever the input -------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
    | st.sampled_from(["TOPIC", "LITERAL", "READ", "ALLOW", "PREFIXED", "describe", "10.0.0.1", "User:a"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from([*ACL, *AUTHORIZE, "kind", "filter", "id", "x"]), inner, max_size=8)
    ),
    max_leaves=20,
)


@given(JSON_VALUES)
def test_any_json_value_is_an_acl_a_filter_a_request_or_an_input_error(value: Any) -> None:
    for parse in (parse_acl, parse_filter, parse_request):
        try:
            parse(value)
        except InputError as exc:
            assert str(exc) and "\n" not in str(exc)


@given(st.binary(max_size=200) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
def test_any_bytes_are_acls_requests_or_an_input_error(data: bytes) -> None:
    for parse in (parse_acls, parse_requests):
        try:
            parse(data, "input")
        except InputError as exc:
            assert str(exc).startswith("input")


# An ACL object near the common spelling: each field a name (any case), a code, UNKNOWN, a string at or over
# Kafka's limit, non-ASCII or a lone surrogate, or another JSON value; sometimes a field missing or one more.
FIELD_VALUES = (
    st.sampled_from([*ACL.values(), "topic", "Prefixed", "read", "UNKNOWN", "ANY", "MATCH", "Group", "DESCRIBE"])
    | st.integers(-1, 15)
    | st.sampled_from(["a" * MAX_STRING_BYTES, "a" * (MAX_STRING_BYTES + 1), "é" * 16384, "\udc80", "ü"])
    | st.none()
    | st.booleans()
    | st.lists(st.integers(), max_size=1)
)


@st.composite
def near_acl_objects(draw: st.DrawFn) -> dict[str, Any]:
    changed = draw(st.sets(st.sampled_from(list(ACL)), max_size=3))
    obj = {key: draw(FIELD_VALUES) if key in changed else value for key, value in ACL.items()}
    if draw(st.booleans()):
        obj.pop(draw(st.sampled_from(list(ACL))))
    if draw(st.booleans()):
        obj[draw(st.sampled_from(["x", "id"]))] = "y"
    return obj


@given(near_acl_objects())
@example({**ACL, "resource_name": "a" * (MAX_STRING_BYTES + 1)})
@example({**ACL, "principal": "é" * 16384})  # 32,768 UTF-8 bytes in 16,384 characters
@example({**ACL, "host": "\udc80"})
@example({**ACL, "id": "x"})
@example({k: v for k, v in ACL.items() if k != "host"})
@example({**ACL, "operation": "UNKNOWN"})
@example({**ACL, "operation": 3, "resource_type": "topic"})
def test_parse_acls_accepts_and_builds_exactly_what_parse_acl_does(obj: dict[str, Any]) -> None:
    """parse_acls builds the common spelling by dict lookups: never an ACL parse_acl refuses, never another one."""
    try:
        expected: StandardAcl | None = parse_acl(obj)
    except InputError:
        expected = None
    try:
        [got] = parse_acls(json.dumps([obj]), "acls.json")
    except InputError as exc:
        assert expected is None and str(exc).startswith("acls.json: element 0: ")
        return
    assert expected is not None and got == expected
    assert [type(value) for value in got] == [type(value) for value in expected]


_ACL_KEYS = ("resource_type", "resource_name", "pattern_type", "principal", "host", "operation", "permission_type")
_ACL_VALUES = st.one_of(
    st.sampled_from(["TOPIC", "topic", "GROUP", "LITERAL", "PREFIXED", "prefixed", "READ", "ALLOW", "DENY", "UNKNOWN"]),
    st.sampled_from(["User:alice", "*", "10.0.0.1", "", "é", "x" * 40_000]),
    st.integers(-1, 20),
    st.none(),
    st.booleans(),
)


@given(
    st.fixed_dictionaries(
        {},
        optional={key: _ACL_VALUES for key in _ACL_KEYS} | {"extra": st.just(1)},
    )
)
@example(
    {
        "resource_type": "TOPIC",
        "resource_name": "t",
        "pattern_type": "LITERAL",
        "principal": "User:a",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }
)
def test_parse_acl_fast_path_answers_as_the_validator(obj: dict[str, Any]) -> None:
    """`parse_acl` takes the common spelling by dict lookups: it accepts and builds exactly what the validator
    does, and refuses what the validator refuses with the validator's own words."""
    try:
        expected: StandardAcl | str = inputs_module._validated_acl(obj)
    except InputError as exc:
        expected = str(exc)
    try:
        got: StandardAcl | str = parse_acl(obj)
    except InputError as exc:
        got = str(exc)
    assert got == expected
