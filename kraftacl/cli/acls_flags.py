"""kafka-acls' options as typer options, with kafka-acls' own descriptions (AclCommand), for `kraft-acl acls`.

Module-level constants only; immutable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from kraftacl.cli.output import Output, output_option


def _opt(name: str, metavar: str | None, text: str) -> Any:
    return typer.Option(name, metavar=metavar, help=text)


def _many(name: str, metavar: str, text: str) -> Any:
    return _opt(name, metavar, f"{text} (repeatable)")


LogDir = Annotated[
    Path | None, _opt("--log-dir", "DIR", "the embedded metadata log directory (created on the first write)")
]

BootstrapServer = Annotated[
    str | None,
    _opt(
        "--bootstrap-server",
        "HOST:PORT",
        "instead of --log-dir: the metadata log is a Kafka topic; a list of host/port pairs to use for "
        "establishing the connection to the Kafka cluster (host1:port1,host2:port2,...)",
    ),
]

CommandConfig = Annotated[
    Path | None,
    _opt(
        "--command-config",
        "FILE",
        "with --bootstrap-server: a property file containing configs to be passed to the client "
        "(librdkafka names: security.protocol, sasl.mechanism, sasl.username, ...)",
    ),
]

MetadataTopic = Annotated[
    str | None, _opt("--metadata-topic", "TOPIC", "with --bootstrap-server: the log's topic (kraft-acl-metadata)")
]

Add = Annotated[bool, _opt("--add", None, "Indicates you are trying to add ACLs.")]

Remove = Annotated[bool, _opt("--remove", None, "Indicates you are trying to remove ACLs.")]

ListFlag = Annotated[
    bool,
    _opt(
        "--list",
        None,
        "List ACLs for the specified resource, use --topic <topic> or --group <group> or --cluster to "
        "specify a resource.",
    ),
]

Topic = Annotated[
    list[str] | None,
    _many(
        "--topic",
        "TOPIC",
        "topic to which ACLs should be added or removed. A value of * indicates ACL should apply to all topics.",
    ),
]

Group = Annotated[
    list[str] | None,
    _many(
        "--group",
        "GROUP",
        "Consumer Group to which the ACLs should be added or removed. A value of * indicates "
        "the ACLs should apply to all groups.",
    ),
]

Cluster = Annotated[bool, _opt("--cluster", None, "Add/Remove cluster ACLs.")]

TransactionalId = Annotated[
    list[str] | None,
    _many(
        "--transactional-id",
        "ID",
        "The transactionalId to which ACLs should be added or removed. A value of * "
        "indicates the ACLs should apply to all transactionalIds.",
    ),
]

DelegationToken = Annotated[
    list[str] | None,
    _many(
        "--delegation-token",
        "ID",
        "Delegation token to which ACLs should be added or removed. A value of * "
        "indicates ACL should apply to all tokens.",
    ),
]

UserPrincipal = Annotated[
    list[str] | None,
    _many(
        "--user-principal",
        "PRINCIPAL",
        "Specifies a user principal as a resource in relation with the "
        "operation. For instance one could grant CreateTokens or DescribeTokens permission on a given user "
        "principal.",
    ),
]

ResourcePatternType = Annotated[
    str,
    _opt(
        "--resource-pattern-type",
        "ANY|MATCH|LITERAL|PREFIXED",
        "The type of the resource pattern or pattern filter. When adding acls, this should be a specific "
        "pattern type, e.g. 'literal' or 'prefixed'. When listing or removing acls, a specific pattern type "
        "can be used to list or remove acls from specific resource patterns, or use the filter values of "
        "'any' or 'match', where 'any' will match any pattern type, but will match the resource name "
        "exactly, where as 'match' will perform pattern matching to list or remove all acls that affect the "
        "supplied resource(s). WARNING: 'match', when used in combination with the '--remove' switch, "
        "should be used with care.",
    ),
]

Operation = Annotated[
    list[str] | None,
    _many(
        "--operation",
        "OPERATION",
        "Operation that is being allowed or denied. Valid operation names are: "
        "Describe, DescribeConfigs, Alter, IdempotentWrite, Read, Delete, Create, ClusterAction, All, "
        "CreateTokens, DescribeTokens, Write, AlterConfigs (default All).",
    ),
]

AllowPrincipal = Annotated[
    list[str] | None,
    _many(
        "--allow-principal",
        "PRINCIPAL",
        "principal is in principalType:name format. Note that principalType "
        "must be supported by the Authorizer being used. For example, User:* is the wild card indicating all "
        "users.",
    ),
]

DenyPrincipal = Annotated[
    list[str] | None,
    _many(
        "--deny-principal",
        "PRINCIPAL",
        "principal is in principalType:name format. By default anyone not "
        "added through --allow-principal is denied access. You only need to use this option as negation to "
        "already allowed set. AND PLEASE REMEMBER DENY RULES TAKES PRECEDENCE OVER ALLOW RULES.",
    ),
]

AllowHost = Annotated[
    list[str] | None,
    _many(
        "--allow-host",
        "HOST",
        "Host from which principals listed in --allow-principal will have access. If "
        "you have specified --allow-principal then the default for this option will be set to * which allows "
        "access from all hosts.",
    ),
]

DenyHost = Annotated[
    list[str] | None,
    _many(
        "--deny-host",
        "HOST",
        "Host from which principals listed in --deny-principal will be denied access. "
        "If you have specified --deny-principal then the default for this option will be set to * which denies "
        "access from all hosts.",
    ),
]

Principal = Annotated[
    list[str] | None,
    _many(
        "--principal",
        "PRINCIPAL",
        "List ACLs for the specified principal. principal is in principalType:name "
        "format. Multiple --principal option can be passed.",
    ),
]

Producer = Annotated[
    bool,
    _opt(
        "--producer",
        None,
        "Convenience option to add/remove ACLs for producer role. This will generate ACLs that allows "
        "WRITE,DESCRIBE and CREATE on topic.",
    ),
]

Consumer = Annotated[
    bool,
    _opt(
        "--consumer",
        None,
        "Convenience option to add/remove ACLs for consumer role. This will generate ACLs that allows "
        "READ,DESCRIBE on topic and READ on group.",
    ),
]

Idempotent = Annotated[
    bool,
    _opt(
        "--idempotent",
        None,
        "Enable idempotence for the producer. This should be used in combination with the --producer option.",
    ),
]

Force = Annotated[bool, _opt("--force", None, "Assume Yes to all queries and do not prompt.")]

OutputOpt = Annotated[Output, output_option("table (kafka-acls' text; text is the same) or json (ids and ACLs)")]
