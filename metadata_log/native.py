"""The v1 row decoder in use: the mypyc-compiled copy of `codec_rows` when it is built and current, else the source.

Module-level state is set once at import and never changes: safe from any thread.

`setup.py` compiles a copy of codec_rows.py, stamped with the SHA-256 of the source it was made
from, into the extension `metadata_log._codec_rows_native` (about 2x faster on replay's decode).
A build whose stamp does not match codec_rows.py as it is now (the source was edited since the
install) is ignored with a warning, so the decoder in use always runs the code in the repository;
`make setup` rebuilds. `KRAFT_ACL_PURE_PYTHON=1` forces the pure-Python decoder.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from metadata_log import codec_rows

NATIVE_MODULE = "metadata_log._codec_rows_native"
DecodeRows = Callable[[bytes, codec_rows.RowTables], tuple[list[str], list[Any]]]


def load_native() -> tuple[ModuleType | None, str]:
    """The compiled decoder module (or None) and why: "native", "disabled", "not built" or "stale"."""
    if os.environ.get("KRAFT_ACL_PURE_PYTHON", "") not in ("", "0"):
        return None, "disabled"
    try:
        module = importlib.import_module(NATIVE_MODULE)
    except ImportError:
        return None, "not built"
    if not str(module.__file__).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return None, "not built"  # the generated copy without its compiled form
    current = hashlib.sha256(Path(codec_rows.__file__).read_bytes()).hexdigest()
    if getattr(module, "SOURCE_SHA256", None) != current:
        warnings.warn(
            f"{module.__file__} was compiled from another version of {codec_rows.__file__}; using the "
            "pure-Python decoder (run `make setup` to rebuild)",
            RuntimeWarning,
            stacklevel=2,
        )
        return None, "stale"
    return module, "native"


_module, DECODER = load_native()
decode_v1_rows: DecodeRows = _module.decode_v1_rows if _module is not None else codec_rows.decode_v1_rows
