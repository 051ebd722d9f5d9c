"""Unit tests: ACL model, filters, config parsing, host text (spec §1, §3, §9, §16.3, §16.5, §17.1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kraftacl.authorizer.decision.config import (
    config_from_properties,
    load_config,
    parse_bool,
    parse_listeners,
    parse_node_id,
    parse_super_users,
)
from kraftacl.authorizer.decision.standard import StandardAuthorizer
from kraftacl.authorizer.errors import ConfigError, InvalidFilterError
from kraftacl.authorizer.model.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    StandardAcl,
    kafka_order,
    pascal_name,
    split_principal,
)
from kraftacl.authorizer.model.filters import (
    ANY_FILTER,
    AccessControlEntryFilter,
    AclBindingFilter,
    ResourcePatternFilter,
)
from kraftacl.authorizer.model.hosts import ip_host_address, java_host_address

RT = ResourceType
PT = PatternType
OP = AclOperation
PERM = AclPermissionType

# ---- §1 enums ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("enum", "codes"),
    [
        (
            RT,
            {
                "UNKNOWN": 0,
                "ANY": 1,
                "TOPIC": 2,
                "GROUP": 3,
                "CLUSTER": 4,
                "TRANSACTIONAL_ID": 5,
                "DELEGATION_TOKEN": 6,
                "USER": 7,
            },
        ),
        (PT, {"UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}),
        (
            OP,
            {
                "UNKNOWN": 0,
                "ANY": 1,
                "ALL": 2,
                "READ": 3,
                "WRITE": 4,
                "CREATE": 5,
                "DELETE": 6,
                "ALTER": 7,
                "DESCRIBE": 8,
                "CLUSTER_ACTION": 9,
                "DESCRIBE_CONFIGS": 10,
                "ALTER_CONFIGS": 11,
                "IDEMPOTENT_WRITE": 12,
                "CREATE_TOKENS": 13,
                "DESCRIBE_TOKENS": 14,
            },
        ),
        (PERM, {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3}),
    ],
)
def test_enum_codes_in_declaration_order(enum: Any, codes: dict[str, int]) -> None:
    assert {member.name: int(member) for member in enum} == codes
    assert [member.name for member in enum] == list(codes)  # declaration order == code order (§1)
    for name, code in codes.items():
        assert enum.from_code(code).name == name


@pytest.mark.parametrize(
    ("enum", "code"),
    [
        (RT, 8),
        (RT, -1),
        (RT, 127),
        (PT, 5),
        (PT, -1),
        (OP, 15),
        (OP, 100),
        (PERM, 4),
        (PERM, -128),
    ],
)
def test_from_code_of_unknown_code_gives_unknown(enum: Any, code: int) -> None:
    assert enum.from_code(code) == enum(0)
    assert enum.from_code(code).name == "UNKNOWN"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TOPIC", RT.TOPIC),
        ("topic", RT.TOPIC),
        ("Topic", RT.TOPIC),
        ("transactional_id", RT.TRANSACTIONAL_ID),
        ("Delegation_Token", RT.DELEGATION_TOKEN),
        ("any", RT.ANY),
        ("TransactionalId", RT.UNKNOWN),
        ("TRANSACTIONALID", RT.UNKNOWN),
        ("", RT.UNKNOWN),
        (" TOPIC", RT.UNKNOWN),
        ("bogus", RT.UNKNOWN),
    ],
)
def test_resource_type_from_string_is_case_insensitive(text: str, expected: RT) -> None:
    assert RT.from_string(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("READ", OP.READ),
        ("read", OP.READ),
        ("describe_configs", OP.DESCRIBE_CONFIGS),
        ("All", OP.ALL),
        ("idempotent_write", OP.IDEMPOTENT_WRITE),
        ("DescribeConfigs", OP.UNKNOWN),
        ("TWO_PHASE_COMMIT", OP.UNKNOWN),
        ("", OP.UNKNOWN),
    ],
)
def test_operation_from_string_is_case_insensitive(text: str, expected: OP) -> None:
    assert OP.from_string(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ALLOW", PERM.ALLOW),
        ("allow", PERM.ALLOW),
        ("Deny", PERM.DENY),
        ("any", PERM.ANY),
        ("permit", PERM.UNKNOWN),
    ],
)
def test_permission_from_string_is_case_insensitive(text: str, expected: PERM) -> None:
    assert PERM.from_string(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("LITERAL", PT.LITERAL),
        ("PREFIXED", PT.PREFIXED),
        ("MATCH", PT.MATCH),
        ("ANY", PT.ANY),
        ("literal", PT.UNKNOWN),
        ("Prefixed", PT.UNKNOWN),
        ("match", PT.UNKNOWN),
        ("", PT.UNKNOWN),
    ],
)
def test_pattern_type_from_string_is_case_sensitive(text: str, expected: PT) -> None:
    assert PT.from_string(text) == expected


def test_only_literal_and_prefixed_are_specific() -> None:
    assert [p.name for p in PT if p.is_specific()] == ["LITERAL", "PREFIXED"]


def test_pascal_names_as_in_the_audit_log() -> None:
    assert [pascal_name(t) for t in RT] == [
        "Unknown",
        "Any",
        "Topic",
        "Group",
        "Cluster",
        "TransactionalId",
        "DelegationToken",
        "User",
    ]
    assert pascal_name(OP.DESCRIBE_CONFIGS) == "DescribeConfigs"


# ---- §2 model -------------------------------------------------------------------------------------------


def test_standard_acl_equality_uses_all_seven_fields_case_sensitively() -> None:
    base = StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", "*", OP.READ, PERM.ALLOW)
    assert base == StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", "*", OP.READ, PERM.ALLOW)
    assert hash(base) == hash(StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", "*", OP.READ, PERM.ALLOW))
    variants = [
        StandardAcl(RT.GROUP, "foo", PT.LITERAL, "User:bob", "*", OP.READ, PERM.ALLOW),
        StandardAcl(RT.TOPIC, "Foo", PT.LITERAL, "User:bob", "*", OP.READ, PERM.ALLOW),
        StandardAcl(RT.TOPIC, "foo", PT.PREFIXED, "User:bob", "*", OP.READ, PERM.ALLOW),
        StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "user:bob", "*", OP.READ, PERM.ALLOW),
        StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", "", OP.READ, PERM.ALLOW),
        StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", "*", OP.WRITE, PERM.ALLOW),
        StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", "*", OP.READ, PERM.DENY),
    ]
    assert all(v != base for v in variants)
    assert len({base, *variants}) == 8


def test_standard_acl_str_and_binding_round_trip() -> None:
    acl = StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", "*", OP.READ, PERM.ALLOW)
    assert str(acl) == (
        "StandardAcl(resourceType=TOPIC, resourceName=foo, patternType=LITERAL, principal=User:bob, "
        "host=*, operation=READ, permissionType=ALLOW)"
    )
    binding = acl.binding()
    assert binding == AclBinding(
        ResourcePattern(RT.TOPIC, "foo", PT.LITERAL), AccessControlEntry("User:bob", "*", OP.READ, PERM.ALLOW)
    )
    assert binding.to_acl() == acl


@pytest.mark.parametrize(
    ("principal", "expected"),
    [
        ("User:bob", ("User", "bob")),
        ("User:a:b", ("User", "a:b")),
        (":bob", ("", "bob")),
        ("User:", ("User", "")),
        ("bob", None),
        ("", None),
    ],
)
def test_split_principal_at_first_colon(principal: str, expected: tuple[str, str] | None) -> None:
    assert split_principal(principal) == expected


def test_kafka_order_as_in_test_list_acls() -> None:
    """§9.4 ORDER line: type asc, name desc, pattern, operation, ..."""

    def acl(rtype: RT, name: str, pattern: PT, op: OP) -> StandardAcl:
        return StandardAcl(rtype, name, pattern, "User:alice", "*", op, PERM.ALLOW)

    expected = [
        acl(RT.TOPIC, "zzz", PT.LITERAL, OP.READ),
        acl(RT.TOPIC, "foo_", PT.LITERAL, OP.READ),
        acl(RT.TOPIC, "foo_", PT.PREFIXED, OP.READ),
        acl(RT.TOPIC, "foo_", PT.PREFIXED, OP.WRITE),
        acl(RT.GROUP, "bar", PT.LITERAL, OP.DESCRIBE_CONFIGS),
        acl(RT.GROUP, "bar", PT.LITERAL, OP.ALTER_CONFIGS),
    ]
    assert kafka_order(list(reversed(expected))) == expected
    assert kafka_order([expected[3], expected[0], expected[5], expected[1], expected[4], expected[2]]) == expected


# ---- §16.3 filter vectors ---------------------------------------------------------------------------------


def pattern_filter(rtype: RT, name: str | None, ptype: PT) -> ResourcePatternFilter:
    return ResourcePatternFilter(rtype, name, ptype)


@pytest.mark.parametrize(
    ("vector", "flt", "pattern", "expected"),
    [
        ("F01", (RT.TOPIC, "Name", PT.LITERAL), (RT.GROUP, "Name", PT.LITERAL), False),
        ("F02", (RT.TOPIC, "NAME", PT.LITERAL), (RT.TOPIC, "Name", PT.LITERAL), False),
        ("F03", (RT.TOPIC, "Name", PT.LITERAL), (RT.TOPIC, "Name", PT.PREFIXED), False),
        ("F04", (RT.ANY, "Name", PT.PREFIXED), (RT.TOPIC, "Name", PT.PREFIXED), True),
        ("F05", (RT.TOPIC, None, PT.MATCH), (RT.TOPIC, "Name", PT.PREFIXED), True),
        ("F06", (RT.TOPIC, "Name-something", PT.MATCH), (RT.TOPIC, "Name", PT.LITERAL), False),
        ("F07", (RT.TOPIC, "*", PT.LITERAL), (RT.TOPIC, "Name", PT.LITERAL), False),
        ("F08", (RT.TOPIC, "Name", PT.ANY), (RT.TOPIC, "*", PT.LITERAL), False),
        ("F09", (RT.TOPIC, "Name", PT.MATCH), (RT.TOPIC, "*", PT.LITERAL), True),
        ("F10", (RT.TOPIC, "Name", PT.PREFIXED), (RT.TOPIC, "Name-something", PT.PREFIXED), False),
        ("F11", (RT.TOPIC, "Name-something", PT.ANY), (RT.TOPIC, "Name", PT.PREFIXED), False),
        ("F12", (RT.TOPIC, "Name-something", PT.MATCH), (RT.TOPIC, "Name", PT.PREFIXED), True),
        ("F13", (RT.TOPIC, "*", PT.MATCH), (RT.TOPIC, "foo", PT.LITERAL), False),
        ("F14", (RT.TOPIC, "*", PT.ANY), (RT.TOPIC, "*", PT.PREFIXED), True),
        ("F15", (RT.TOPIC, None, PT.UNKNOWN), (RT.TOPIC, "x", PT.LITERAL), False),
        ("F17", (RT.TOPIC, None, PT.MATCH), (RT.TOPIC, "x", PT.UNKNOWN), True),
        # Extra cases around the same rules (§9.2 consequences).
        ("F09b", (RT.TOPIC, "Name", PT.MATCH), (RT.TOPIC, "Name", PT.LITERAL), True),
        ("F12b", (RT.TOPIC, "Name", PT.MATCH), (RT.TOPIC, "Name", PT.PREFIXED), True),
        ("F13b", (RT.TOPIC, "*", PT.MATCH), (RT.TOPIC, "*", PT.LITERAL), True),
        ("F13c", (RT.TOPIC, "*", PT.MATCH), (RT.TOPIC, "*", PT.PREFIXED), True),
        ("F13d", (RT.TOPIC, "*", PT.MATCH), (RT.TOPIC, "", PT.PREFIXED), True),
        ("F15b", (RT.TOPIC, None, PT.UNKNOWN), (RT.TOPIC, "x", PT.UNKNOWN), True),
        ("F15c", (RT.TOPIC, "x", PT.UNKNOWN), (RT.TOPIC, "x", PT.UNKNOWN), True),
        ("F-any", (RT.ANY, None, PT.ANY), (RT.USER, "", PT.UNKNOWN), True),
        ("F-unknown-type", (RT.UNKNOWN, None, PT.ANY), (RT.TOPIC, "x", PT.LITERAL), False),
    ],
)
def test_resource_pattern_filter_vectors(
    vector: str, flt: tuple[RT, str | None, PT], pattern: tuple[RT, str, PT], expected: bool
) -> None:
    assert pattern_filter(*flt).matches(ResourcePattern(*pattern)) is expected, vector
    assert pattern_filter(*flt).matches_fields(*pattern) is expected, vector


def test_f16_match_filter_against_unknown_pattern_raises() -> None:
    with pytest.raises(InvalidFilterError, match="Unsupported PatternType: UNKNOWN"):
        pattern_filter(RT.TOPIC, "x", PT.MATCH).matches(ResourcePattern(RT.TOPIC, "x", PT.UNKNOWN))
    assert isinstance(InvalidFilterError("x"), ValueError)  # Kafka: IllegalArgumentException
    # The type check comes first: another type never raises.
    assert pattern_filter(RT.GROUP, "x", PT.MATCH).matches(ResourcePattern(RT.TOPIC, "x", PT.UNKNOWN)) is False


ANON_ENTRY = AccessControlEntry("User:ANONYMOUS", "*", OP.READ, PERM.ALLOW)


@pytest.mark.parametrize(
    ("vector", "flt", "entry", "expected"),
    [
        (
            "E01",
            AccessControlEntryFilter("User:ANONYMOUS", None, OP.ANY, PERM.ANY),
            AccessControlEntry("User:*", "*", OP.READ, PERM.ALLOW),
            False,
        ),
        ("E02", AccessControlEntryFilter("User:*", None, OP.ANY, PERM.ANY), ANON_ENTRY, False),
        (
            "E03",
            AccessControlEntryFilter(None, None, OP.READ, PERM.ANY),
            AccessControlEntry("User:bob", "*", OP.ALL, PERM.ALLOW),
            False,
        ),
        (
            "E04",
            AccessControlEntryFilter(None, "*", OP.ANY, PERM.ANY),
            AccessControlEntry("User:bob", "", OP.READ, PERM.ALLOW),
            False,
        ),
        (
            "E03b",
            AccessControlEntryFilter(None, None, OP.ALL, PERM.ANY),
            AccessControlEntry("User:bob", "*", OP.ALL, PERM.ALLOW),
            True,
        ),
        ("E-exact", AccessControlEntryFilter("User:ANONYMOUS", "*", OP.READ, PERM.ALLOW), ANON_ENTRY, True),
        ("E-any", AccessControlEntryFilter(), ANON_ENTRY, True),
        ("E-perm", AccessControlEntryFilter(None, None, OP.ANY, PERM.DENY), ANON_ENTRY, False),
        (
            "E-unknown-perm",
            AccessControlEntryFilter(None, None, OP.ANY, PERM.UNKNOWN),
            AccessControlEntry("User:bob", "*", OP.READ, PERM.UNKNOWN),
            True,
        ),
    ],
)
def test_entry_filter_vectors(
    vector: str, flt: AccessControlEntryFilter, entry: AccessControlEntry, expected: bool
) -> None:
    assert flt.matches(entry) is expected, vector


def test_binding_filter_needs_both_parts() -> None:
    binding = StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", "*", OP.READ, PERM.ALLOW).binding()
    assert ANY_FILTER.matches(binding)
    assert AclBindingFilter(pattern_filter(RT.TOPIC, "foo", PT.LITERAL)).matches(binding)
    assert not AclBindingFilter(
        pattern_filter(RT.TOPIC, "foo", PT.LITERAL), AccessControlEntryFilter("User:alice")
    ).matches(binding)
    assert not AclBindingFilter(pattern_filter(RT.GROUP, None, PT.ANY)).matches(binding)


def test_f18_describe_half() -> None:
    """AuthorizerTest.testAclsFilter: describe (ANY, bar-<u>, MATCH) lists acl3 and acl4."""
    u = "5c3e0b8d-77aa-4d2e-9f10-0b8e1a2b3c4d"
    acl1 = StandardAcl(RT.TOPIC, f"foo-{u}", PT.LITERAL, "User:alice", "*", OP.READ, PERM.ALLOW)
    acl2 = StandardAcl(RT.TOPIC, f"foo-{u}", PT.LITERAL, "User:alice", "192.168.0.1", OP.WRITE, PERM.ALLOW)
    acl3 = StandardAcl(RT.TOPIC, f"bar-{u}", PT.LITERAL, "User:alice", "*", OP.DESCRIBE, PERM.ALLOW)
    acl4 = StandardAcl(RT.TOPIC, "bar-", PT.PREFIXED, "User:*", "*", OP.READ, PERM.ALLOW)
    auth = StandardAuthorizer()
    auth.load_snapshot({"a1": acl1, "a2": acl2, "a3": acl3, "a4": acl4})
    auth.complete_initial_load()
    listed = auth.acls(AclBindingFilter(pattern_filter(RT.ANY, f"bar-{u}", PT.MATCH)))
    assert set(listed) == {acl3, acl4}
    assert listed == [acl3, acl4]  # index order: name descending
    assert set(auth.acls(AclBindingFilter.of(acl1))) == {acl1}
    assert set(auth.acls(AclBindingFilter(pattern_filter(RT.TOPIC, f"bar-{u}", PT.LITERAL)))) == {acl3}
    assert auth.acls(AclBindingFilter(pattern_filter(RT.TOPIC, "baz", PT.ANY))) == []
    assert len(auth.acls(ANY_FILTER)) == 4


# ---- §9.5 find_indefinite_field ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        (ResourcePatternFilter(RT.ANY, None, PT.MATCH), "Resource type is ANY."),
        (ResourcePatternFilter(RT.UNKNOWN, None, PT.MATCH), "Resource type is UNKNOWN."),
        (ResourcePatternFilter(RT.TOPIC, None, PT.MATCH), "Resource name is NULL."),
        (ResourcePatternFilter(RT.TOPIC, "foo", PT.MATCH), "Resource pattern type is MATCH."),
        (ResourcePatternFilter(RT.TOPIC, "foo", PT.UNKNOWN), "Resource pattern type is UNKNOWN."),
        (ResourcePatternFilter(RT.TOPIC, "foo", PT.ANY), None),  # ANY is not reported
        (ResourcePatternFilter(RT.TOPIC, "foo", PT.LITERAL), None),
        (ResourcePatternFilter(RT.TOPIC, "foo", PT.PREFIXED), None),
    ],
)
def test_pattern_filter_indefinite_field(flt: ResourcePatternFilter, message: str | None) -> None:
    assert flt.find_indefinite_field() == message


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        (AccessControlEntryFilter(None, None, OP.ANY, PERM.ANY), "Principal is NULL"),
        (AccessControlEntryFilter("User:bob", None, OP.ANY, PERM.ANY), "Host is NULL"),
        (AccessControlEntryFilter("User:bob", "*", OP.ANY, PERM.UNKNOWN), "Operation is ANY"),
        (AccessControlEntryFilter("User:bob", "*", OP.UNKNOWN, PERM.ANY), "Operation is UNKNOWN"),
        (AccessControlEntryFilter("User:bob", "*", OP.READ, PERM.ANY), "Permission type is ANY"),
        (AccessControlEntryFilter("User:bob", "*", OP.READ, PERM.UNKNOWN), "Permission type is UNKNOWN"),
        (AccessControlEntryFilter("User:bob", "*", OP.READ, PERM.DENY), None),
    ],
)
def test_entry_filter_indefinite_field(flt: AccessControlEntryFilter, message: str | None) -> None:
    assert flt.find_indefinite_field() == message


def test_binding_filter_checks_pattern_first_then_entry() -> None:
    definite_pattern = ResourcePatternFilter(RT.TOPIC, "foo", PT.LITERAL)
    definite_entry = AccessControlEntryFilter("User:bob", "*", OP.READ, PERM.ALLOW)
    assert (
        AclBindingFilter(
            ResourcePatternFilter(RT.TOPIC, None, PT.LITERAL), AccessControlEntryFilter()
        ).find_indefinite_field()
        == "Resource name is NULL."
    )
    assert AclBindingFilter(definite_pattern, AccessControlEntryFilter()).find_indefinite_field() == "Principal is NULL"
    exact = AclBindingFilter(definite_pattern, definite_entry)
    assert exact.find_indefinite_field() is None
    assert exact.matches_at_most_one()
    assert not ANY_FILTER.matches_at_most_one()
    acl = StandardAcl(RT.TOPIC, "foo", PT.LITERAL, "User:bob", "*", OP.READ, PERM.ALLOW)
    assert AclBindingFilter.of(acl) == exact
    assert AclBindingFilter.of(acl).matches_at_most_one()


@pytest.mark.parametrize(
    ("flt", "unknown"),
    [
        (AclBindingFilter(), False),
        (AclBindingFilter(ResourcePatternFilter(RT.UNKNOWN)), True),
        (AclBindingFilter(ResourcePatternFilter(pattern_type=PT.UNKNOWN)), True),
        (AclBindingFilter(entry=AccessControlEntryFilter(operation=OP.UNKNOWN)), True),
        (AclBindingFilter(entry=AccessControlEntryFilter(permission_type=PERM.UNKNOWN)), True),
        (AclBindingFilter(ResourcePatternFilter(RT.TOPIC, "x", PT.MATCH)), False),
    ],
)
def test_is_unknown(flt: AclBindingFilter, unknown: bool) -> None:
    assert flt.is_unknown() is unknown


# ---- §3 / §16.5 configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, set()),
        (" ", set()),
        ("", set()),
        (";;", set()),
        ("User:bob;User:alice ", {"User:bob", "User:alice"}),
        (";  User:bob  ;  User:alice ", {"User:bob", "User:alice"}),
        ("User: bob", {"User: bob"}),  # inner spaces are kept
        ("User:a:b", {"User:a:b"}),
        (":alice", {":alice"}),  # non-empty with a colon: accepted (parseKafkaPrincipal splits it)
        ("User:", {"User:"}),
    ],
)
def test_parse_super_users(value: str | None, expected: set[str]) -> None:
    assert parse_super_users(value) == frozenset(expected)


@pytest.mark.parametrize(("value", "bad"), [("bob;:alice", "bob"), ("User:alice; carol ;User:bob", "carol")])
def test_parse_super_users_rejects_a_piece_without_colon(value: str, bad: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_super_users(value)
    message = f"expected a string in format principalType:principalName but got {bad}"
    assert str(info.value).endswith(message)
    assert "super.users" in str(info.value)  # the project's ConfigError names the key
    assert isinstance(info.value, ValueError)  # Kafka: IllegalArgumentException


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, False),
        ("true", True),
        ("false", False),
        (" true ", True),
        ("TRUE", True),
        ("True", True),
        ("yes", False),
        ("1", False),
        ("", False),
        ("t", False),
        ("truex", False),
        ("\ttrue\n", True),
    ],
)
def test_parse_allow_everyone_like_boolean_parse_boolean(value: str | None, expected: bool) -> None:
    assert parse_bool(value) is expected


@pytest.mark.parametrize(("value", "expected"), [("\x00true", True), ("true\x01", True), ("\xa0true", False)])
def test_parse_allow_everyone_trims_like_java(value: str, expected: bool) -> None:
    assert parse_bool(value) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("\x00User:bob", {"User:bob"}),
        ("User:bob\u00a0", {"User:bob\u00a0"}),
        ("User:bob\u3000;User:alice", {"User:bob\u3000", "User:alice"}),
    ],
)
def test_parse_super_users_trims_like_java(value: str, expected: set[str]) -> None:
    assert parse_super_users(value) == frozenset(expected)


def test_parse_listeners_and_node_id() -> None:
    assert parse_listeners(None) == ()
    assert parse_listeners(" CONTROLLER , ,PLAINTEXT,") == ("CONTROLLER", "PLAINTEXT")
    assert parse_node_id(None) == -1
    assert parse_node_id(" 3 ") == 3
    assert parse_node_id("three") == -1


def test_config_from_properties() -> None:
    cfg = config_from_properties(
        {
            "super.users": "User:bob;User:alice ",
            "allow.everyone.if.no.acl.found": " true ",
            "early.start.listeners": "CONTROLLER",
            "node.id": "1",
            "listeners": "X",
        }
    )
    assert cfg.super_users == frozenset({"User:bob", "User:alice"})
    assert cfg.allow_everyone_if_no_acl_found is True
    assert cfg.early_start_listeners == ("CONTROLLER",)
    assert cfg.node_id == 1
    assert cfg.extra == {"listeners": "X"}
    empty = config_from_properties({})
    assert empty.super_users == frozenset()
    assert empty.allow_everyone_if_no_acl_found is False


def test_load_config_from_a_properties_file(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("# comment\nsuper.users = User:bob;User:alice \nallow.everyone.if.no.acl.found=TRUE\n")
    cfg = load_config(path)
    assert cfg.super_users == frozenset({"User:bob", "User:alice"})
    assert cfg.allow_everyone_if_no_acl_found is True
    bad = tmp_path / "bad.properties"
    bad.write_text("super.users=bob;:alice\n")
    with pytest.raises(ConfigError, match=r"bad\.properties: .*but got bob$"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.properties")


# ---- §17.1 client host text ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "text"),
    [
        ("10.0.0.1", "10.0.0.1"),
        ("192.168.1.255", "192.168.1.255"),
        ("::1", "0:0:0:0:0:0:0:1"),
        ("0:0:0:0:0:0:0:1", "0:0:0:0:0:0:0:1"),
        ("::", "0:0:0:0:0:0:0:0"),
        ("2001:db8::1", "2001:db8:0:0:0:0:0:1"),
        ("2001:DB8:0000:0000:0000:0000:0000:0001", "2001:db8:0:0:0:0:0:1"),
        ("fe80::a:b0c", "fe80:0:0:0:0:0:a:b0c"),
        ("::ffff:1.2.3.4", "1.2.3.4"),
        ("fe80::1%eth0", "fe80:0:0:0:0:0:0:1%eth0"),
        ("fe80::1%2", "fe80:0:0:0:0:0:0:1%2"),
    ],
)
def test_java_host_address(address: str, text: str) -> None:
    assert java_host_address(address) == text


def test_text_longer_than_any_address_is_not_kept_by_the_host_cache() -> None:
    # serve's callers state their client_address (up to 32,767 characters): 4096 distinct long ones, each a 400,
    # were all kept by the cache, 530 MB of serve for good
    import tracemalloc

    longest = "1111:2222:3333:4444:5555:6666:255.255.255.255%abcdefghijklmno"
    assert ip_host_address(longest) == "1111:2222:3333:4444:5555:6666:ffff:ffff%abcdefghijklmno"
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(100):
            assert ip_host_address(f"{i:04d}" + "x" * 100_000) is None
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 1_000_000, f"{kept} bytes kept after 100 long texts"
