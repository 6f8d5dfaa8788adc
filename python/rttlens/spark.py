"""rttlens on Apache Spark: `analyze(spark, paths, shards=N)` analyses many
hosts' captures on a cluster and returns the three tables as Spark
DataFrames (docs/fleet.md).

A task is a (capture set, shard) pair: N tasks per capture set, each
running the engine (`rttlens analyze FILES --shard K/N --format arrow`) on
the whole set and analysing one N-th of its connections (docs/schema.md,
"Shards"). The tasks run in `mapInArrow`, one per partition; each yields
its Arrow record batches as they come (with a `capture_set` column added),
encoded and tagged with their table. That intermediate result is persisted
once (so the engine runs once per task), and each table is a second
`mapInArrow` over it that decodes its batches, itself persisted (Spark's
columnar cache) before the intermediate one is let go. The files must be readable from every
executor (a shared file system, or object storage through a path the
engine can open: see docs/fleet.md for copying from S3 first).
"""

from __future__ import annotations

import os
from typing import Iterable, Iterator, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.ipc as ipc

from . import engine
from .engine import TABLES, CaptureSet, Tables

#: The column added to every table: the capture set's name.
CAPTURE_SET = "capture_set"

_TASK_SCHEMA = "id int, name string, files array<string>, keylogs array<string>, shard int, shards int"
_RAW_SCHEMA = "table string, ipc binary"


def _run_tasks(seed: int, threads: Optional[int]):
    def run(tasks: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for tb in tasks:
            for t in tb.to_pylist():
                s = CaptureSet(files=tuple(t["files"]), keylogs=tuple(t["keylogs"] or ()), name=t["name"])
                for table, b in engine.batches(s, (t["shard"], t["shards"]), seed, threads):
                    # the batch with its capture set's name, encoded: one
                    # row of the intermediate table
                    b = b.append_column(CAPTURE_SET, pa.array([s.name] * b.num_rows, pa.string()))
                    sink = pa.BufferOutputStream()
                    with ipc.new_stream(sink, b.schema) as w:
                        w.write_batch(b)
                    yield pa.RecordBatch.from_pydict(
                        {"table": [table], "ipc": [sink.getvalue().to_pybytes()]},
                        schema=pa.schema([("table", pa.string()), ("ipc", pa.binary())]),
                    )

    return run


def _decode(raw: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for rb in raw:
        for payload in rb.column(0).to_pylist():
            yield from ipc.open_stream(payload)


def spark_schemas():
    """Each table's Spark schema (`StructType`): the engine's Arrow schema
    with `capture_set` (string) last."""
    from pyspark.sql.pandas.types import from_arrow_schema

    out = {}
    for t, s in engine.schemas().items():
        s = s.append(pa.field(CAPTURE_SET, pa.string(), nullable=False))
        out[t] = from_arrow_schema(s)
    return out


def analyze(
    spark,
    paths: Iterable[Union[CaptureSet, str, "os.PathLike[str]", Sequence[str]]],
    shards: int = 1,
    *,
    seed: int = 0,
    threads: Optional[int] = 1,
    persist: bool = True,
) -> Tables:
    """Analyses capture sets on Spark; the connections, findings and
    requests as three DataFrames (docs/schema.md's columns, and
    `capture_set`).

    - `paths`: the capture sets, each a path (one file), a list of paths
      (one host's rotated files, analysed as one) or a `CaptureSet` (with
      key logs and a name); every executor must be able to read them.
    - `shards`: tasks per capture set (`--shard K/N`): N tasks each read the
      whole set and analyse a share of its connections.
    - `seed`: the Community ID seed (`--community-id-seed`).
    - `threads`: the engine's threads per task (1: Spark runs the tasks in
      parallel; `None`: every core).
    - `persist`: run the tasks now, once, and keep the three tables in
      Spark's cache (MEMORY_AND_DISK) for the queries that follow; without
      it every action on a DataFrame runs the engine again.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if isinstance(paths, (str, os.PathLike, CaptureSet)):
        paths = [paths]
    sets = [CaptureSet.of(p) for p in paths]
    shards = int(shards)
    if shards < 1:
        raise ValueError(f"shards={shards}: at least 1")
    tasks = [
        (i * shards + k, s.name, list(s.files), list(s.keylogs), k + 1, shards)
        for i, s in enumerate(sets)
        for k in range(shards)
    ]
    schemas = spark_schemas()
    if not tasks:
        return Tables(*(spark.createDataFrame([], schemas[t]) for t in TABLES))
    # one task per partition (parallelize slices a list evenly)
    rdd = spark.sparkContext.parallelize(tasks, len(tasks))
    raw = spark.createDataFrame(rdd, _TASK_SCHEMA).mapInArrow(_run_tasks(seed, threads), _RAW_SCHEMA)
    if persist:
        raw = raw.persist(StorageLevel.MEMORY_AND_DISK)
        raw.count()
    tables = [raw.where(F.col("table") == t).select("ipc").mapInArrow(_decode, schemas[t]) for t in TABLES]
    if persist:
        # each table decoded once, into Spark's columnar cache, which the
        # queries read; the encoded batches are then let go
        tables = [df.persist(StorageLevel.MEMORY_AND_DISK) for df in tables]
        for df in tables:
            df.count()
        raw.unpersist()
    return Tables(*tables)

