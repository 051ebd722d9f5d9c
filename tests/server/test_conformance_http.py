"""Every conformance scenario (answers produced by Kafka's own StandardAuthorizer) through serve's HTTP API.

One broker-role serve per distinct configuration tails an embedded log; each scenario is written to
that log as one batch (the previous scenario's ACLs removed, this one's added, as raw records, so the
unusual ACLs Kafka evaluates load too), and its requests are asked once serve has applied the batch.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from kraftacl.authorizer.inputs.whatif import load_acls
from kraftacl.authorizer.state.records import record_from_acl
from kraftacl.metadata_log.backends.file.log import FileLog
from kraftacl.metadata_log.codec.avro import new_uuid
from kraftacl.metadata_log.records import MetadataRecord, RemoveAccessControlEntryRecord
from tests.server.serve_process import BROKER_TOKEN, ServeProcess, base_properties

SCENARIOS = sorted(p for p in (Path(__file__).parent.parent / "conformance").iterdir() if p.is_dir())


def _config(scenario: Path) -> tuple[tuple[str, str], ...]:
    lines = (scenario / "server.properties").read_text().splitlines()
    return tuple(sorted(tuple(line.split("=", 1)) for line in lines if "=" in line))  # type: ignore[misc]


def _ask(client: httpx.Client, request: dict[str, object]) -> dict[str, Any]:
    """The answer in the corpus's expected.jsonl form (JSON values)."""
    kind = request.get("kind", "authorize")
    ctx = {"principal": request.get("principal"), "client_address": request.get("host")}
    if kind == "authorize":
        body = {
            **ctx,
            "actions": [
                {
                    "operation": request["operation"],
                    "resource_type": request["resource_type"],
                    "resource_name": request["resource_name"],
                }
            ],
        }
        return {"result": client.post("/v1/authorize", json=body).json()["results"][0]}
    if kind == "by_resource_type":
        body = {**ctx, "operation": request["operation"], "resource_type": request["resource_type"]}
        return {"result": client.post("/v1/authorize-by-resource-type", json=body).json()["result"]}
    if kind == "authorized_operations":
        body = {**ctx, "resource_type": request["resource_type"], "resource_name": request["resource_name"]}
        return {
            "authorized_operations": client.post("/v1/authorized-operations", json=body).json()["authorized_operations"]
        }
    answer = client.post("/v1/acls/describe", json={"filter": request["filter"]}).json()
    return {"acls": [{k: v for k, v in acl.items() if k != "id"} for acl in answer["acls"]]}


def _groups() -> dict[tuple[tuple[str, str], ...], list[Path]]:
    groups: dict[tuple[tuple[str, str], ...], list[Path]] = defaultdict(list)
    for scenario in SCENARIOS:
        groups[_config(scenario)].append(scenario)
    return groups


@pytest.mark.parametrize("config", list(_groups()), ids=lambda c: ";".join(f"{k}={v}" for k, v in c))
def test_scenarios_through_http(config: tuple[tuple[str, str], ...], tmp_path: Path) -> None:
    log_dir = tmp_path / "log"
    props = base_properties(tmp_path, log_dir, process_roles="broker", **{k.replace(".", "_"): v for k, v in config})
    props["super.users"] = ";".join(filter(None, [dict(config).get("super.users", ""), "User:admin"]))
    props["broker.principals"] = "User:broker"
    live: list[str] = []
    with (
        FileLog(log_dir) as log,
        ServeProcess(tmp_path, props).start() as serve,
        serve.client(token=BROKER_TOKEN) as client,
    ):
        for scenario in _groups()[config]:
            records: list[MetadataRecord] = [RemoveAccessControlEntryRecord(i) for i in live]
            live = [new_uuid() for _ in load_acls(scenario / "acls.json")]
            records += [record_from_acl(i, acl) for i, acl in zip(live, load_acls(scenario / "acls.json"), strict=True)]
            end = log.append(records).last_offset
            deadline = time.monotonic() + 15
            while client.get("/v1/status").json()["last_applied_offset"] < end:
                assert time.monotonic() < deadline, f"serve did not apply offset {end}"
                time.sleep(0.02)
            requests = [json.loads(line) for line in (scenario / "requests.jsonl").read_text().splitlines()]
            expected = [json.loads(line) for line in (scenario / "expected.jsonl").read_text().splitlines()]
            for request, want in zip(requests, expected, strict=True):
                have = _ask(client, request)
                if "acls" in want:
                    key = lambda a: tuple(a.values())  # noqa: E731 - sets, as the corpus README allows
                    assert sorted(have["acls"], key=key) == sorted(want["acls"], key=key), (scenario.name, request)
                else:
                    assert have == want, (scenario.name, request.get("id"), request.get("why"))
