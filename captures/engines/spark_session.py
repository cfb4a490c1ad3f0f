"""Spark sessions for the decode job: a local or spark-submit one, or a Spark Connect one.

`session` starts (or reuses) a classic session with Spark's log quiet and the Arrow settings
the job relies on; `connect_session` reaches a Spark Connect server and ships kipwire to it.
Both register the job's `kafkacapture` data source.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile

from pyspark.sql import SparkSession

from .py_files import write_py_files
from .spark_datasource import KafkaCaptureDataSource

__all__ = ["connect_session", "session", "task_slots"]

# Spark's own logging, quiet unless asked: the job prints its own progress. The repl logger at
# the root's level keeps Spark from announcing a shell default of WARN.
_LOG4J2 = """status = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
rootLogger.level = {level}
rootLogger.appenderRef.console.ref = console
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = {level}
"""


def _log_config(level: str) -> str:
    """A log4j2 configuration file with Spark's root level at `level`."""
    fd, path = tempfile.mkstemp(prefix="kipwire-log4j2-", suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.write(_LOG4J2.replace("{level}", level.lower()))
    return path


def session(
    master: str | None = "local[*]",
    app: str = "kipwire-capture",
    log_level: str = "error",
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """Start (or reuse) a Spark session for the job; `master` None keeps spark-submit's.

    `conf` adds or overrides Spark settings (such as `spark.eventLog.enabled` to measure).
    """
    # the Python workers run this interpreter (it has pyarrow and kipwire), unless told otherwise
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    quiet = f"-Dlog4j2.configurationFile=file:{_log_config(log_level)}"
    builder = SparkSession.builder.appName(app)
    if master is not None:
        builder = builder.master(master)
    spark = (
        builder.config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", quiet)
        .config("spark.executor.extraJavaOptions", quiet)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "4096")
        # a fragment row holds up to 4 MiB of payload: cap the batches fed to the decode by size
        .config("spark.sql.execution.arrow.maxBytesPerBatch", str(64 << 20))
        # Spark's own writer holds microseconds at best (captures.engines.schema says why)
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        # reading the nanosecond tables back in Spark gives epoch nanoseconds, not an error
        .config("spark.sql.legacy.parquet.nanosAsLong", "true")
        .config(map=conf or {})
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel(log_level.upper())
    spark.dataSource.register(KafkaCaptureDataSource)
    return spark


def connect_session(remote: str, app: str = "kipwire-capture", ship: bool = True) -> SparkSession:
    """A Spark Connect session to `remote` (sc://host:port), ready for the job.

    The server's Python workers import kipwire from the zip this sends as a session artifact
    (`ship`), so the cluster needs only pyspark's own Python dependencies; the data source is
    registered for the session, as Spark 4 allows over Connect.
    """
    spark = SparkSession.builder.remote(remote).appName(app).getOrCreate()
    if ship:
        folder = tempfile.mkdtemp(prefix="kipwire-connect-")
        zipped = write_py_files(os.path.join(folder, "kipwire.zip"))
        # the artifact is named by its content: a second session ships the same zip again
        digest = hashlib.sha256(zipped.read_bytes()).hexdigest()[:16]
        named = zipped.rename(zipped.with_name(f"kipwire-{digest}.zip"))
        try:
            spark.addArtifacts(str(named), pyfile=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    spark.dataSource.register(KafkaCaptureDataSource)
    return spark


def task_slots(spark: SparkSession) -> int:
    """Task slots the session has, or a guess where Spark Connect cannot say."""
    try:
        return spark.sparkContext.defaultParallelism
    except AttributeError:  # a Spark Connect session has no SparkContext
        master = spark.conf.get("spark.master", "") or ""
        inner = master[6:-1] if master.startswith("local[") else ""
        if inner.isdigit():
            return int(inner)
        return (os.cpu_count() or 2) if master.startswith("local") else 8
