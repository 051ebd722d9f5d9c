"""`metadata_log.native`: which v1 row decoder is in use, and the rules that keep a compiled one honest.

CI (CI=true) must run the compiled decoder, built by `make setup` through setup.py; a developer
machine without a C compiler runs the source, and these tests say so loudly instead of passing.
Whether the two decoders agree is tested in test_codec_rows.py, which runs against both.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from metadata_log import codec_fast, codec_rows, lazy_records, native

IN_CI = os.environ.get("CI") == "true"


def test_ci_runs_the_compiled_decoder() -> None:
    module, why = native.load_native()
    if module is None and not IN_CI and why == "not built":
        pytest.skip("NOT TESTED: the mypyc-compiled decoder is not built here (no C compiler?); run `make setup`")
    assert why == "native", f"the compiled decoder is {why}; `make setup` builds it from setup.py"
    assert module is not None and module.__file__ is not None
    assert Path(module.__file__).suffix == ".so" or ".pyd" in module.__file__
    assert native.DECODER == "native" and native.decode_v1_rows is module.decode_v1_rows


def test_the_log_uses_the_decoder_in_use() -> None:
    assert lazy_records.decode_v1_rows is native.decode_v1_rows
    assert codec_fast.decode_v1_rows is native.decode_v1_rows


def test_a_build_from_another_source_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module, why = native.load_native()
    if module is None:
        pytest.skip(f"NOT TESTED: no compiled decoder to find stale ({why})")
    edited = tmp_path / "codec_rows.py"
    edited.write_bytes(Path(codec_rows.__file__).read_bytes() + b"\n# edited after the build\n")
    monkeypatch.setattr(codec_rows, "__file__", str(edited))
    with pytest.warns(RuntimeWarning, match="compiled from another version.*make setup"):
        assert native.load_native() == (None, "stale")


def test_pure_python_on_request_and_when_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRAFT_ACL_PURE_PYTHON", "1")
    assert native.load_native() == (None, "disabled")
    monkeypatch.setenv("KRAFT_ACL_PURE_PYTHON", "0")
    monkeypatch.setattr(native, "NATIVE_MODULE", "metadata_log._no_such_module")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert native.load_native() == (None, "not built")


def test_a_new_process_picks_the_pure_decoder_when_told() -> None:
    code = "from metadata_log import native; print(native.DECODER, native.decode_v1_rows.__module__)"
    env = {**os.environ, "KRAFT_ACL_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["disabled", "metadata_log.codec_rows"]
