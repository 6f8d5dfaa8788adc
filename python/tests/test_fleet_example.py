"""The Done-when of issue 42: docs/fleet.md's Spark example, run as a
user runs it (`python fleet_p99.py ROOT 2`, Spark on local[2]), prints the
fleet's p99 table, and its rows are the p99s computed from the Parquet
files."""

from __future__ import annotations

import math
import os
import subprocess
import sys

from conftest import doc_blocks
from test_queries import expected_p99


def table_rows(out: str, header: str) -> list:
    """The rows of the `DataFrame.show()` table whose header names
    `header`."""
    lines = out.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("|") and header in l)
    rows = []
    for l in lines[start + 2 :]:
        if not l.startswith("|"):
            break
        rows.append([c.strip() for c in l.strip("|").split("|")])
    return rows


def test_the_example_prints_the_fleets_p99_table(fleet, tmp_path):
    script = tmp_path / "fleet_p99.py"
    script.write_text(doc_blocks()[("python", "fleet_p99")])
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    run = subprocess.run(
        [sys.executable, str(script), str(fleet / "hosts"), "2", str(tmp_path / "out")],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = table_rows(run.stdout, "p99_ms")
    want = expected_p99(fleet)
    assert len(rows) == len(want) >= 5, run.stdout
    for got, w in zip(rows, want):
        assert got[0] == w[0] and int(got[1]) == w[1], (got, w)
        # show() prints the doubles as Java writes them (shortest repr)
        assert math.isclose(float(got[3]), w[3], rel_tol=1e-9, abs_tol=1e-9), (got, w)
    assert "total_ms" in run.stdout, "the findings by total cost"
    for t in ("connections", "findings", "requests"):
        assert any(p.suffix == ".parquet" for p in (tmp_path / "out" / t).iterdir()), t
