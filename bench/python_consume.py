#!/usr/bin/env python3
"""Consumes one trajkit read in Python, the way a user would, for bench/python_read.sh.

usage: python_consume.py MODE PATH
  arrow   iterate read_arrow's batches, count rows, drop each batch
  duckdb  DuckDB scans the RecordBatchReader (never materialised in Python)
  dicts   iterate read's records (dicts), count them
Prints the number of rows (and for duckdb the sum of steps).
"""
import sys

import trajkit

mode, path = sys.argv[1], sys.argv[2]
if mode == "arrow":
    print(sum(b.num_rows for b in trajkit.read_arrow(path)))
elif mode == "duckdb":
    import duckdb

    reader = trajkit.read_arrow(path)
    con = duckdb.connect()
    print(con.execute("SELECT count(*), sum(steps), sum(length(record)) FROM reader").fetchall())
elif mode == "dicts":
    print(sum(1 for _ in trajkit.read(path)))
else:
    sys.exit(f"unknown mode {mode!r}")
