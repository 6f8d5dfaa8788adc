"""`rttlens.spark.analyze` on PySpark local[2] (issue 42): its three
DataFrames equal the single-machine Parquet files row for row, on every
shared capture and on a bench-sized capture cut as a host's rotation."""

from __future__ import annotations

import math
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import capture_set, parquet_tables, shared_captures

import rttlens
from rttlens.spark import CAPTURE_SET

#: The columns that order each table's rows.
KEYS = {"connections": ("transport", "index"), "findings": ("transport", "connection", "rank"), "requests": ("transport", "connection", "index")}


def _norm(v):
    """A value compared as data: NaN equal to itself, maps as sorted
    pairs."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, list):
        items = [_norm(x) for x in v]
        if items and all(isinstance(x, tuple) and len(x) == 2 for x in items):
            return sorted(items, key=lambda kv: kv[0])  # a map
        return items
    if isinstance(v, tuple):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    return v


def rows(t: pa.Table, table: str) -> list:
    out = [_norm(r) for r in t.to_pylist()]
    return sorted(out, key=lambda r: tuple(r[k] for k in KEYS[table]))


def assert_same(spark_rows: list, parquet: pa.Table, table: str, what: str) -> None:
    want = rows(parquet, table)
    assert len(spark_rows) == len(want), f"{what} {table}: {len(spark_rows)} rows on Spark, {len(want)} in Parquet"
    for i, (a, b) in enumerate(zip(spark_rows, want)):
        if a != b:
            diff = {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)}
            pytest.fail(f"{what} {table} row {i}: Spark / Parquet differ in {diff}")


def by_set(df, table: str) -> dict:
    """A Spark table's rows (through Arrow) by capture set, without the
    `capture_set` column."""
    t = df.toArrow()
    out = {}
    for r in t.to_pylist():
        out.setdefault(r.pop(CAPTURE_SET), []).append(_norm(r))
    return {k: sorted(v, key=lambda r: tuple(r[c] for c in KEYS[table])) for k, v in out.items()}


def test_spark_columns_are_the_parquet_columns_and_capture_set(spark, tmp_path):
    f = shared_captures()[0]
    pt = parquet_tables(capture_set(f), tmp_path)
    st = rttlens.spark.analyze(spark, [capture_set(f)])
    for t, df in zip(rttlens.TABLES, st):
        assert df.columns == pt[t].column_names + [CAPTURE_SET], t


def test_spark_equals_parquet_on_every_shared_capture(spark, tmp_path):
    sets = [capture_set(f) for f in shared_captures()]
    st = rttlens.spark.analyze(spark, sets, shards=2)
    got = {t: by_set(df, t) for t, df in zip(rttlens.TABLES, st)}
    counts = dict.fromkeys(rttlens.TABLES, 0)
    for i, s in enumerate(sets):
        pt = parquet_tables(s, tmp_path / str(i))
        for t in rttlens.TABLES:
            assert_same(got[t].get(s.name, []), pt[t], t, s.name)
            counts[t] += pt[t].num_rows
    # the corpus has connections, findings and requests to compare
    assert counts["connections"] >= 80 and counts["findings"] >= 100 and counts["requests"] >= 50, counts


def test_spark_on_a_rotated_bench_capture_equals_parquet(spark, tmp_path, bench_capture, rotated_bench):
    """The bench capture cut in three is one host's capture set: on Spark
    (3 shards) its rows are the single-machine run's over the same three
    files, and the run over the uncut file's (a connection across a cut
    stays whole)."""
    s = rttlens.CaptureSet(files=tuple(map(str, rotated_bench)), name="bench-host")
    st = rttlens.spark.analyze(spark, [s], shards=3)
    got = {t: by_set(df, t).get("bench-host", []) for t, df in zip(rttlens.TABLES, st)}
    rotated = parquet_tables(s, tmp_path / "rotated")
    whole = parquet_tables(rttlens.CaptureSet(files=(str(bench_capture),)), tmp_path / "whole")
    for t in rttlens.TABLES:
        assert_same(got[t], rotated[t], t, "the rotated set")
        assert_same(got[t], whole[t], t, "the uncut capture")
    assert whole["connections"].num_rows >= 300, whole["connections"].num_rows


def test_object_store_paths_are_fetched_first(spark, tmp_path):
    """A capture set named by URI (here `file://`, through pyarrow.fs as
    `s3://` would be) is copied to the task's disk and analysed as the
    local file."""
    f = shared_captures()[-1]
    local = capture_set(f)
    uri = rttlens.CaptureSet(files=(f.as_uri(),), keylogs=tuple(Path(k).as_uri() for k in local.keylogs), name="by-uri")
    st = rttlens.spark.analyze(spark, [uri], shards=2)
    pt = parquet_tables(local, tmp_path)
    for t, df in zip(rttlens.TABLES, st):
        assert_same(by_set(df, t).get("by-uri", []), pt[t], t, f.as_uri())


def test_capture_sets_are_one_per_host_directory(tmp_path, rotated_bench):
    for i, p in enumerate(rotated_bench):
        (tmp_path / "host-a").mkdir(exist_ok=True)
        (tmp_path / "host-a" / p.name).symlink_to(p)
    (tmp_path / "host-b").mkdir()
    f = shared_captures()[0]
    (tmp_path / "host-b" / f.name).symlink_to(f)
    (tmp_path / "host-b" / "keys.keylog").write_text("")
    sets = rttlens.capture_sets(str(tmp_path))
    assert [s.name for s in sets] == ["host-a", "host-b"]
    assert [len(s.files) for s in sets] == [3, 1]
    assert sets[0].files == tuple(sorted(sets[0].files))
    assert [len(s.keylogs) for s in sets] == [0, 1]
