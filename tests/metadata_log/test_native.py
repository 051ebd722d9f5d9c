"""`metadata_log.native`: which compiled hot loops are in use, and the rules that keep them honest.

Two modules are compiled by mypyc (setup.py): the v1 row decoder (`metadata_log.codec.rows`) and
the bulk row loops of the index build and the initial replay (`authorizer.index.bulk_rows`). CI
(CI=true) must run both compiled; a developer machine without a C compiler runs the sources, and
these tests say so loudly instead of passing. Whether compiled and source agree is tested in
test_codec_rows.py and tests/authorizer/index/test_bulk_rows.py, which run against both.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

import pytest

from kraftacl.authorizer.index import build as index_build
from kraftacl.authorizer.index import bulk_rows, native_rows
from kraftacl.authorizer.state import image as image_module
from kraftacl.metadata_log import native
from kraftacl.metadata_log.codec import fast as codec_fast
from kraftacl.metadata_log.codec import lazy_records
from kraftacl.metadata_log.codec import rows as codec_rows

IN_CI = os.environ.get("CI") == "true"
# (source module, its compiled copy's name, the module choosing between them, its "why" attribute)
COMPILED = [
    pytest.param(codec_rows, "kraftacl.metadata_log.codec._rows_native", codec_fast, "DECODER", id="codec_rows"),
    pytest.param(bulk_rows, "kraftacl.authorizer.index._bulk_rows_native", native_rows, "BULK_ROWS", id="bulk_rows"),
]
each_compiled = pytest.mark.parametrize(("source", "native_name", "chooser", "why_name"), COMPILED)


@each_compiled
def test_ci_runs_the_compiled_copy(source: ModuleType, native_name: str, chooser: ModuleType, why_name: str) -> None:
    module, why = native.load_native(source, native_name)
    if module is None and not IN_CI and why == "not built":
        pytest.skip(f"NOT TESTED: {native_name} is not built here (no C compiler?); run `make setup`")
    assert why == "native", f"{native_name} is {why}; `make setup` builds it from setup.py"
    assert module is not None and module.__file__ is not None
    assert Path(module.__file__).suffix == ".so" or ".pyd" in module.__file__
    assert getattr(chooser, why_name) == "native"


def test_the_callers_use_the_loops_in_use() -> None:
    module, _ = native.load_native(codec_rows, "kraftacl.metadata_log.codec._rows_native")
    decoder = (module or codec_rows).decode_v1_rows
    assert codec_fast.decode_v1_rows is decoder
    assert vars(lazy_records)["codec_fast"] is codec_fast  # the name its loops look up (imported, not exported)
    module, _ = native.load_native(bulk_rows, "kraftacl.authorizer.index._bulk_rows_native")
    for loop in ("group_acls_into", "intern_merged", "prefix_tries_from"):  # the index build's loops, in steps
        assert getattr(index_build, loop) is getattr(native_rows, loop) is getattr(module or bulk_rows, loop), loop
    assert vars(image_module)["apply_new_rows"] is native_rows.apply_new_rows is (module or bulk_rows).apply_new_rows


@each_compiled
def test_a_build_from_another_source_is_not_used(
    source: ModuleType, native_name: str, chooser: ModuleType, why_name: str, tmp_path: Path
) -> None:
    module, why = native.load_native(source, native_name)
    if module is None:
        pytest.skip(f"NOT TESTED: no compiled {native_name} to find stale ({why})")
    edited = tmp_path / Path(str(source.__file__)).name
    edited.write_bytes(Path(str(source.__file__)).read_bytes() + b"\n# edited after the build\n")
    copy = ModuleType(source.__name__)
    copy.__file__ = str(edited)
    with pytest.warns(RuntimeWarning, match="compiled from another version.*make setup"):
        assert native.load_native(copy, native_name) == (None, "stale")


@each_compiled
def test_pure_python_on_request_and_when_not_built(
    source: ModuleType, native_name: str, chooser: ModuleType, why_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KRAFT_ACL_PURE_PYTHON", "1")
    assert native.load_native(source, native_name) == (None, "disabled")
    monkeypatch.setenv("KRAFT_ACL_PURE_PYTHON", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert native.load_native(source, native_name + "_no_such_module") == (None, "not built")


def test_a_new_process_picks_the_sources_when_told() -> None:
    code = (
        "from kraftacl.metadata_log.codec import fast as codec_fast; "
        "from kraftacl.authorizer.index import native_rows; "
        "print(codec_fast.DECODER, codec_fast.decode_v1_rows.__module__, "
        "native_rows.BULK_ROWS, native_rows.group_acls.__module__)"
    )
    env = {**os.environ, "KRAFT_ACL_PURE_PYTHON": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        "disabled",
        "kraftacl.metadata_log.codec.rows",
        "disabled",
        "kraftacl.authorizer.index.bulk_rows",
    ]
