#!/usr/bin/env python3
"""Many captures exported by Spark, one task per capture, then one SQL query over the whole dataset.

    spark-submit fleet/spark_export.py --out DIR [--pcapsleuth BIN] [--sql QUERY] HOST=CAPTURE...
    python3 fleet/spark_export.py --master 'local[2]' --out DIR ... HOST=CAPTURE...   (PySpark alone)

Each HOST=CAPTURE is one capture (a file, or a directory of rotated files) that every worker can read,
and the host it was taken on. Spark runs one task per capture; the task runs

    BIN export CAPTURE --parquet DIR --label host=HOST --replace -j 1

so DIR (a directory every worker can write: one machine in local mode, a shared file system on a
cluster) gathers every capture's partitions (`DIR/transactions/host=HOST/capture=NAME/...`). `--replace`
makes a retried task give the same dataset. Then Spark reads DIR/transactions as one table,
`transactions`, and prints the rows of QUERY as JSON lines. The default query counts, per host, capture
and minute (UTC), the MySQL requests, their error responses and the ERR 1146 (`Table doesn't exist`)
among them. A task that fails stops the job with its stderr.

The README's "When one machine is not enough" runs this in local mode, and says how a cluster job with
captures in object storage differs.
"""
import argparse
import json
import shutil
import subprocess
import sys

from pyspark.sql import SparkSession

ERRORS_PER_MINUTE = """
SELECT host, capture,
       date_format(date_trunc('MINUTE', timestamp_micros(request_time DIV 1000)), 'yyyy-MM-dd HH:mm') AS minute,
       count(*) AS requests,
       count(error_code) AS errors,
       count_if(error_code = 1146) AS err_1146
FROM transactions
WHERE is_query
GROUP BY host, capture, minute
ORDER BY host, capture, minute
"""


def export_task(binary, out):
    """The function every task runs on its capture, on a worker."""

    def run(item):
        host, capture = item
        cmd = [binary, "export", capture, "--parquet", out, "--label", f"host={host}", "--replace", "-j", "1"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        return host, capture, done.returncode, done.stderr.strip()

    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="the root of the datasets, writable by every worker")
    p.add_argument("--pcapsleuth", default=shutil.which("pcapsleuth") or "pcapsleuth",
                   help="the pcapsleuth binary on every worker")
    p.add_argument("--sql", default=ERRORS_PER_MINUTE, help="the query over `transactions`")
    p.add_argument("--master", help="Spark's master, e.g. local[2] (default: spark-submit's)")
    p.add_argument("captures", nargs="+", metavar="HOST=CAPTURE")
    a = p.parse_args()
    items = []
    for c in a.captures:
        host, sep, path = c.partition("=")
        if not sep or not host or not path:
            p.error(f"expected HOST=CAPTURE, got {c!r}")
        items.append((host, path))

    builder = SparkSession.builder.appName("pcapsleuth export")
    if a.master:
        builder = builder.master(a.master)
    spark = (
        builder
        # Spark reads Parquet's nanosecond timestamps only as nanoseconds since the epoch (a long).
        .config("spark.sql.legacy.parquet.nanosAsLong", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    results = (
        spark.sparkContext.parallelize(items, len(items))
        .map(export_task(a.pcapsleuth, a.out))
        .collect()
    )
    failed = [r for r in results if r[2] != 0]
    for host, capture, code, err in results:
        print(f"exported {capture} (host={host}): exit {code}: {err}", file=sys.stderr)
    if failed:
        spark.stop()
        sys.exit(1)
    spark.read.parquet(f"{a.out}/transactions").createOrReplaceTempView("transactions")
    for row in spark.sql(a.sql).collect():
        print(json.dumps(row.asDict(), default=str))
    spark.stop()


if __name__ == "__main__":
    main()
