"""The deployment guide's configurations (examples/cluster, examples/central, examples/serve) are what serve and the
broker plugin accept: every serve file parses with serve's own configuration reader (from the repository root, as
the guide runs them), without unknown keys, and every broker file names the plugin and its serve URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftacl.authorizer.decision.config import load_properties
from kraftacl.server.config import load

REPO = Path(__file__).resolve().parents[2]
SERVE_FILES = sorted(
    p
    for p in REPO.glob("examples/*/*.properties")
    if "listeners" in load_properties(p) and "node.id" in load_properties(p)
)
BROKER_FILES = sorted(REPO.glob("examples/*/broker.properties"))


@pytest.mark.parametrize("path", SERVE_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_serve_example_is_a_valid_serve_config(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    config = load(path.relative_to(REPO))
    assert config.warnings == ()
    if path.parent.name in ("cluster", "central"):  # the multi-broker topologies: a replicated Kafka-backed log
        assert config.log.bootstrap_servers and config.log.replication_factor == 3
        assert config.log.min_insync_replicas == 2


def test_the_cluster_examples_give_two_controllers_and_a_broker_role_serve() -> None:
    roles = [load_properties(REPO / f"examples/cluster/serve-{n}.properties")["process.roles"] for n in (1, 2, 3)]
    assert roles == ["broker,controller", "broker,controller", "broker"]


@pytest.mark.parametrize("path", BROKER_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_broker_example_names_the_plugin_and_its_serves(path: Path) -> None:
    props = load_properties(path)
    assert props["authorizer.class.name"] == "io.github.kraftacl.plugin.KraftAclAuthorizer"
    assert props["kraft.acl.urls"].startswith("http")
    assert (REPO / props["kraft.acl.token.file"]).is_file()
