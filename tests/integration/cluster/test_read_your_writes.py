"""Read-your-writes on the cluster: an ACL change answered by the active controller carries an offset; any other serve
asked with that `min_offset` answers from a state holding it (waiting the milliseconds it lags), and refuses an
offset beyond the log's end with a 400 naming the field. The CLI does the same with `--min-offset`, and `--server`
takes every controller's URL (the standby answers 421 and the next one is asked)."""

from __future__ import annotations

import os
import subprocess
import time
import uuid

from kraftacl.api.endpoints import AUTHORIZE, CREATE_ACLS, DELETE_ACLS, DESCRIBE_ACLS
from kraftacl.harness.cluster.deployment import ADMIN_TOKEN, BROKER_TOKEN, Deployment
from kraftacl.harness.cluster.kafka_clients import Acl
from kraftacl.harness.serve_process import kraft_acl_command


def _acl(topic: str) -> dict[str, str]:
    return {
        "resource_type": "TOPIC",
        "resource_name": topic,
        "pattern_type": "LITERAL",
        "principal": "User:ryw",
        "host": "*",
        "operation": "READ",
        "permission_type": "ALLOW",
    }


def _decide(cluster: Deployment, index: int, topic: str, min_offset: int) -> tuple[int, object]:
    body = {
        "principal": "User:ryw",
        "client_address": "10.0.0.1",
        "min_offset": min_offset,
        "actions": [{"operation": "READ", "resource_type": "TOPIC", "resource_name": topic}],
    }
    status, answer = cluster.serves[index].call(AUTHORIZE, BROKER_TOKEN, body, "CONTROLLER")
    return status, answer


def _settled(cluster: Deployment, timeout: float = 120.0) -> None:
    """Every serve follows the log with no lag (the cluster may come from the chaos test's faults, whose recovery
    that test checks: here only the propagation of a write is measured)."""
    deadline = time.monotonic() + timeout
    while True:
        statuses = [cluster.status(i) for i in range(len(cluster.serves))]
        if all(s is not None and s.get("ready") and s.get("following") and s.get("lag") == 0 for s in statuses):
            return
        assert time.monotonic() < deadline, f"the serves did not settle: {statuses}"
        time.sleep(0.2)


def test_a_decision_with_min_offset_sees_the_write_on_every_serve(sidecar_cluster: Deployment) -> None:
    _settled(sidecar_cluster)
    active = sidecar_cluster.active_controller()
    assert active is not None
    controller = sidecar_cluster.serves[active]
    for n in range(10):
        topic = f"ryw-{n}-{uuid.uuid4().hex[:6]}"
        status, created = controller.call(CREATE_ACLS, ADMIN_TOKEN, {"acls": [_acl(topic)]}, "CONTROLLER")
        assert status == 200 and created["results"][0]["error_code"] == 0, created
        for index in range(len(sidecar_cluster.serves)):  # asked at once: no sleep, no retry
            status, answer = _decide(sidecar_cluster, index, topic, created["offset"])
            assert status == 200 and answer["results"] == ["ALLOWED"], (index, answer)  # type: ignore[index]
            assert answer["offset"] >= created["offset"]  # type: ignore[index]
        status, deleted = controller.call(DELETE_ACLS, ADMIN_TOKEN, {"filters": [_acl(topic)]}, "CONTROLLER")
        assert status == 200 and deleted["offset"] > created["offset"], deleted
        for index in range(len(sidecar_cluster.serves)):
            status, answer = _decide(sidecar_cluster, index, topic, deleted["offset"])
            assert status == 200 and answer["results"] == ["DENIED"], (index, answer)  # type: ignore[index]


def test_min_offset_beyond_the_log_is_a_400_naming_the_field(sidecar_cluster: Deployment) -> None:
    status, answer = _decide(sidecar_cluster, 2, "anything", 10**12)
    assert status == 400, answer
    assert answer["error"]["field"] == "$.min_offset" and "beyond the end" in answer["error"]["message"]  # type: ignore[index]


def test_the_cli_writes_through_any_controller_and_reads_its_write_on_another_serve(
    sidecar_cluster: Deployment,
) -> None:
    controllers = ",".join(s.url("CONTROLLER") for s in sidecar_cluster.serves[: sidecar_cluster.controllers])
    topic = f"ryw-cli-{uuid.uuid4().hex[:6]}"
    env = {**os.environ, "KRAFT_ACL_TOKEN": ADMIN_TOKEN}
    add = ["acls", "--server", controllers, "--add", "--allow-principal", "User:ryw", "--operation", "Read"]
    added = subprocess.run(
        [*kraft_acl_command(), *add, "--topic", topic], capture_output=True, text=True, timeout=60, env=env
    )
    assert added.returncode == 0, added.stderr
    line = next(li for li in added.stderr.splitlines() if "written at log offset" in li)
    offset = line.split("written at log offset ")[1].split(";")[0]
    ask = ["authorize", "--server", sidecar_cluster.serves[2].url("CONTROLLER"), "--min-offset", offset]
    question = ["--principal", "User:ryw", "--host", "10.0.0.1", "--operation", "Read", "--topic", topic]
    env["KRAFT_ACL_TOKEN"] = BROKER_TOKEN
    answered = subprocess.run(
        [*kraft_acl_command(), *ask, *question], capture_output=True, text=True, timeout=60, env=env
    )
    assert answered.returncode == 0 and '"ALLOWED"' in answered.stdout, answered.stdout + answered.stderr


def test_describe_through_any_broker_sees_every_acknowledged_write(sidecar_cluster: Deployment) -> None:
    """The sidecar topology's own path: an ACL created through a client of one broker (the active controller's
    plugin writes it to the Kafka topic) is in a DescribeAcls at once through a client of another broker, whose
    plugin asks its serve, which may be a follower of the topic that has not applied it yet, `consistent` (every
    write acknowledged before it); and so is its removal."""
    writer, reader = sidecar_cluster.admin(node=1), sidecar_cluster.admin(node=3)
    for n in range(10):
        acl = Acl("User:ryw-broker", "READ", f"ryw-broker-{n}-{uuid.uuid4().hex[:6]}")
        writer.create_acls([acl])
        seen = reader.client.describe_acls(acl.filter(), request_timeout=30).result()
        assert seen == [acl.binding()], f"round {n}: the write was not seen: {seen}"
        assert writer.delete_acls([acl]) == 1
        assert reader.client.describe_acls(acl.filter(), request_timeout=30).result() == [], f"round {n}: deleted"
    status, described = sidecar_cluster.serves[2].call(DESCRIBE_ACLS, ADMIN_TOKEN, {"consistent": True}, "CONTROLLER")
    assert status == 200, described
