"""Writing reports: Parquet datasets as Spark writes them, and CSV as one file with a header, for local output
directories (on a cluster filesystem, `hdfs://` or `s3a://`, CSV stays Spark's directory of parts).

Functions of a DataFrame and a path; each writes to a temporary name first, so a report file is whole or absent.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pyspark.sql import DataFrame

from kraftacl.pipeline.errors import PipelineError


def is_remote(out: str) -> bool:
    """True for a URI with a scheme other than file: (the driver cannot rename its files itself)."""
    return "://" in out and not out.startswith("file://")


def prepare(out: str) -> None:
    """Create a local output directory (a remote one is Spark's to create); refuse a file in its place."""
    if is_remote(out):
        return
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise PipelineError(f"--out {out} exists and is not a directory")
    path.mkdir(parents=True, exist_ok=True)


def write_parquet(df: DataFrame, out: str, name: str) -> str:
    """`<out>/<name>.parquet`, replaced whole."""
    target = f"{out.rstrip('/')}/{name}.parquet"
    df.write.mode("overwrite").parquet(target)
    return target


def write_csv(df: DataFrame, out: str, name: str) -> str:
    """`<out>/<name>.csv`: one file with a header line (rows in the DataFrame's order)."""
    target = f"{out.rstrip('/')}/{name}.csv"
    if is_remote(out):
        df.write.mode("overwrite").option("header", True).csv(target)
        return target
    parts = Path(f"{target}.{os.getpid()}.parts")
    try:
        df.coalesce(1).write.mode("overwrite").option("header", True).option("emptyValue", "").csv(str(parts))
        written = sorted(parts.glob("part-*.csv"))
        if len(written) > 1:
            raise PipelineError(f"expected one CSV part in {parts}, found {len(written)}")
        if written and written[0].stat().st_size:
            os.replace(written[0], target)
        else:  # no rows: Spark writes no header, the report still has one
            Path(target).write_text(",".join(df.columns) + "\n", encoding="utf-8")
    finally:
        shutil.rmtree(parts, ignore_errors=True)
    return target
