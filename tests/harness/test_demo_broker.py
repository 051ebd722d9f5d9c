"""`make broker`'s files, without a broker: the plugin's properties with every path absolute (a broker started in
any directory finds them), serve's early-start URL from `make run`'s configuration, the client property files; and
one clear line when no serve answers. (The broker itself: tests/test_readme.py's Kafka walkthrough.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftacl.authorizer.decision.config import load_properties
from kraftacl.harness.demo_broker import USERS, DemoBrokerError, client_properties, main, plugin_properties, serve_url
from tests.conftest import REPO
from tests.server.serve_process import free_port

TEMPLATE = REPO / "examples" / "plugin" / "broker.properties"


def test_plugin_properties_have_absolute_paths_that_resolve_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)  # `make broker` runs in the checkout; the template's paths are relative to it
    written = tmp_path / "plugin.properties"
    written.write_text(plugin_properties(TEMPLATE, "http://127.0.0.1:19190"))
    monkeypatch.chdir(tmp_path)  # a broker started elsewhere
    props = load_properties(written)
    token = Path(props["kraft.acl.token.file"])
    assert token.is_absolute() and token.is_file() and token == REPO / "examples" / "plugin" / "plugin.token"
    assert props["kraft.acl.urls"] == "http://127.0.0.1:19190"
    assert props["authorizer.class.name"] == "io.github.kraftacl.plugin.KraftAclAuthorizer"
    assert props["super.users"] == "User:admin;User:ANONYMOUS"
    assert load_properties(TEMPLATE)["kraft.acl.token.file"] == "examples/plugin/plugin.token"  # the template's rule


def test_serve_url_is_the_early_start_listener_of_make_runs_config() -> None:
    assert serve_url(REPO / "examples" / "serve" / "server.properties") == "http://127.0.0.1:9190"


def test_client_properties_are_sasl_plain_for_each_demo_user(tmp_path: Path) -> None:
    for user, (password, _) in USERS.items():
        path = tmp_path / f"{user}.properties"
        path.write_text(client_properties(user))
        props = load_properties(path)
        assert props["security.protocol"] == "SASL_PLAINTEXT" and props["sasl.mechanism"] == "PLAIN"
        assert f'username="{user}" password="{password}";' in props["sasl.jaas.config"]


def test_no_serve_is_one_line_naming_make_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "server.properties"
    config.write_text(f"listeners=CONTROLLER://127.0.0.1:{free_port()}\nmetadata.log.dir={tmp_path / 'log'}\n")
    monkeypatch.chdir(REPO)
    jar = tmp_path / "plugin.jar"
    jar.write_bytes(b"")
    code = main(["start", "--serve-config", str(config), "--plugin-jar", str(jar), str(tmp_path / "broker")])
    err = capsys.readouterr().err.splitlines()
    assert code == 1 and len(err) == 1 and err[0].startswith("kraft-acl: error: no kraft-acl serve answers at ")
    assert "start it first with `make run`" in err[0]
    assert not (tmp_path / "broker" / "plugin.properties").exists() and os.listdir(tmp_path / "broker") == []
    with pytest.raises(DemoBrokerError):
        serve_url(tmp_path / "missing.properties")
