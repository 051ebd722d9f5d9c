"""Timed pipeline runs for `kraft-acl bench --suite pipeline`: `python -m kraftacl.pipeline.bench fold|permissions ...`
prints one JSON object (the job's seconds after the session is up, and what it produced).

One run per process, so each master (local[1], local[2]) gets a fresh JVM.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from kraftacl.authorizer.decision.config import AuthorizerConfig
from kraftacl.pipeline.inputs import read_principals, read_resources
from kraftacl.pipeline.jobs.fold import fold, state_at
from kraftacl.pipeline.jobs.permissions import report
from kraftacl.pipeline.session import build_session
from kraftacl.pipeline.sources.log import LogSource, load_events


def fold_run(log_dir: Path, master: str, out: Path) -> dict[str, Any]:
    """Decode the whole log and fold it to its high-water mark, written as a snapshot."""
    spark = build_session("kraft-acl bench fold", master)
    try:
        start = time.perf_counter()
        events = load_events(spark, LogSource(log_dir=log_dir))
        folded = fold(events, events.high_watermark, out)
        seconds = time.perf_counter() - start
    finally:
        spark.stop()
    return {"seconds": round(seconds, 2), "records": events.high_watermark, "acls": folded.acls}


def permissions_run(log_dir: Path, resources: Path, principals: Path, master: str, out: Path) -> dict[str, Any]:
    """The state at the high-water mark, then the report's rows written as Parquet."""
    spark = build_session("kraft-acl bench permissions", master)
    try:
        start = time.perf_counter()
        events = load_events(spark, LogSource(log_dir=log_dir))
        acls = state_at(events, events.high_watermark).cache()
        built = report(spark, acls, read_resources(spark, resources), read_principals(principals), AuthorizerConfig())
        rows = built.rows.cache()
        rows.write.mode("overwrite").parquet(str(out))
        seconds = time.perf_counter() - start
        count = rows.count()
    finally:
        spark.stop()
    return {"seconds": round(seconds, 2), "rows": count}


def main(argv: list[str]) -> None:
    """`fold LOG_DIR MASTER OUT` or `permissions LOG_DIR RESOURCES PRINCIPALS MASTER OUT`."""
    if argv[0] == "fold":
        result = fold_run(Path(argv[1]), argv[2], Path(argv[3]))
    else:
        result = permissions_run(Path(argv[1]), Path(argv[2]), Path(argv[3]), argv[4], Path(argv[5]))
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
