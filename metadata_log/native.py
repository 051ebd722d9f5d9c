"""Compiled hot loops: use a module's mypyc-compiled copy when it is built and current, else the source.

Stateless; safe from any thread. This module imports nothing of the project, so any layer may use
it (the decision core included: see the import contracts in pyproject.toml).

`setup.py` compiles a copy of each hot module (`metadata_log/codec/rows.py` -> the extension
`metadata_log.codec._rows_native`, `authorizer/index/bulk_rows.py` -> `authorizer.index._bulk_rows_native`),
stamped with the SHA-256 of the source it was made from. A build whose stamp does not match the
source as it is now (edited since the install) is ignored with a warning, so the code that runs is
always the code in the repository; `make setup` rebuilds. `KRAFT_ACL_PURE_PYTHON=1` forces the
sources. Where each choice is made: `metadata_log.codec.fast.DECODER`, `authorizer.index.native_rows.BULK_ROWS`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import os
import warnings
from pathlib import Path
from types import ModuleType

WHY = ("native", "disabled", "not built", "stale")


def load_native(source: ModuleType, native_name: str) -> tuple[ModuleType | None, str]:
    """The compiled copy `native_name` of `source` (or None) and why: one of `WHY`."""
    if os.environ.get("KRAFT_ACL_PURE_PYTHON", "") not in ("", "0"):
        return None, "disabled"
    try:
        module = importlib.import_module(native_name)
    except ImportError:
        return None, "not built"
    if not str(module.__file__).endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return None, "not built"  # the generated copy without its compiled form
    current = hashlib.sha256(Path(str(source.__file__)).read_bytes()).hexdigest()
    if getattr(module, "SOURCE_SHA256", None) != current:
        warnings.warn(
            f"{module.__file__} was compiled from another version of {source.__file__}; using the "
            "pure-Python source (run `make setup` to rebuild)",
            RuntimeWarning,
            stacklevel=2,
        )
        return None, "stale"
    return module, "native"
