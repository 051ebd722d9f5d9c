"""The SparkSession the jobs run in: local mode (`local[*]`) unless told otherwise, quiet JVM logs, the Kafka
connector jars fetched by the set-up (`scripts/spark-jars.sh fetch`), never downloaded at run time.

`build_session` sets process environment (the Python the local workers run) before the JVM starts;
call it once per process, from the driver's main thread.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from kraftacl.pipeline.errors import PipelineError

JARS_ENV = "KRAFT_ACL_SPARK_JARS"
DEFAULT_JARS = Path(__file__).resolve().parent.parent / ".spark" / "jars"
LOG4J2 = Path(__file__).resolve().parent / "log4j2.properties"
DEFAULT_MASTER = "local[*]"


def local_driver_memory() -> str:
    """Heap for a local-mode driver (which is the whole of Spark there): a quarter of the machine's memory,
    between 1 and 16 GiB. Spark's own default of 1g loses task results when a 10M-record log is folded."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "1g"
    return f"{min(max(total // 4 >> 30, 1), 16)}g"


def connector_jars() -> list[str]:
    """The Kafka connector jars: $KRAFT_ACL_SPARK_JARS (a directory, or a comma-separated list), else .spark/jars."""
    configured = os.environ.get(JARS_ENV, "").strip()
    if configured and not Path(configured).is_dir():
        return [jar for jar in configured.split(",") if jar]
    directory = Path(configured) if configured else DEFAULT_JARS
    jars = sorted(str(path) for path in directory.glob("*.jar")) if directory.is_dir() else []
    if not any("spark-sql-kafka" in Path(jar).name for jar in jars):
        raise PipelineError(
            f"the Spark Kafka connector is not in {directory}: run `make setup` (or `bash scripts/spark-jars.sh "
            f"fetch`), or point {JARS_ENV} at the jars"
        )
    return jars


def under_spark_submit() -> bool:
    """True when spark-submit started this driver (it then owns --master, --jars and the Python)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ or "SPARK_SUBMIT_OPTS" in os.environ


def build_session(
    app: str,
    master: str | None = None,
    *,
    kafka: bool = False,
    progress: bool = False,
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A SparkSession for one job. Outside spark-submit: `master` (default local[*]), the workers run this
    Python, JVM logs at ERROR, no web UI, a driver heap sized to the machine (`local_driver_memory`); under
    spark-submit its own settings stand.

    `kafka` adds the connector jars (spark.jars) outside spark-submit; `progress` shows
    Spark's console progress bar (stages and tasks) on stderr; `conf` overrides anything.
    """
    builder = SparkSession.builder.appName(app)
    submitted = under_spark_submit()
    if not submitted:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        builder = (
            builder.master(master or DEFAULT_MASTER)
            .config("spark.ui.enabled", "false")
            .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{LOG4J2}")
            .config("spark.sql.shuffle.partitions", "8")
            .config("spark.driver.memory", local_driver_memory())
        )
    elif master is not None:
        builder = builder.master(master)
    builder = builder.config("spark.ui.showConsoleProgress", "true" if progress else "false")
    if kafka and not submitted:  # under spark-submit, --jars (or --packages) puts them on the driver's classpath
        builder = builder.config("spark.jars", ",".join(connector_jars()))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
