#!/usr/bin/env python3
"""Runs SQL with DuckDB over the Parquet datasets `pcapsleuth export` wrote: the oracle of tests/export.rs.

    duckdb_sql.py ROOT < queries.json

ROOT is an export's root directory. Each dataset under it (`transactions`, `connections`, `closes`,
`rates`, `ceilings`) is a view of the same name over every file of the dataset, read hive-partitioned:
`capture` and the label keys come from the directories (`host=db3/capture=big/`) as well as from the
files, so a query sees every capture exported into ROOT. Standard input is a JSON list of SQL queries;
standard output is a JSON list with, per query, its rows as lists of values (timestamps as nanoseconds
since the epoch, as integers).
"""
import datetime
import json
import os
import sys

import duckdb

DATASETS = ["transactions", "connections", "closes", "rates", "ceilings"]


def plain(v):
    """A value JSON can carry exactly: timestamps as integer nanoseconds."""
    if isinstance(v, datetime.datetime):
        # DuckDB hands TIMESTAMPTZ_NS back as a datetime (microseconds); the query should cast with
        # epoch_ns() where nanoseconds matter.
        return int(v.timestamp() * 1_000_000) * 1000
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def main():
    root = sys.argv[1]
    queries = json.load(sys.stdin)
    con = duckdb.connect()
    for d in DATASETS:
        if os.path.isdir(os.path.join(root, d)):
            path = os.path.join(root, d, "**", "*.parquet").replace("'", "''")
            con.execute(
                f"CREATE VIEW {d} AS SELECT * FROM read_parquet('{path}', hive_partitioning = true)"
            )
    out = []
    for q in queries:
        out.append([[plain(v) for v in row] for row in con.execute(q).fetchall()])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
