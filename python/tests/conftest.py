"""Fixtures of the Python tests (run by .ci/run after `pip install
./python`): the repository, the shared captures, a bench-sized capture
made by bench/make-capture.sh, the Parquet tables of one machine's run,
a Spark session on local[2], and the SQL blocks of docs/fleet.md.

What a test needs and does not find (the captures, root for the bench
capture, Java, tshark) FAILS it, naming what is missing: never a skip."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import rttlens

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "captures"


def shared_captures() -> list:
    """Every capture of the shared corpus (public and itts), sorted."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the tests read the real captures there")
    found = sorted(
        p for d in ("public", "itts") for p in (SHARED / d).iterdir() if p.suffix in (".pcap", ".cap", ".pcapng")
    )
    assert len(found) >= 30, f"only {len(found)} captures under {SHARED}"
    return found


def capture_set(path: Path) -> rttlens.CaptureSet:
    """A capture with the key log beside it, when there is one."""
    k = path.with_suffix(".keylog")
    return rttlens.CaptureSet(files=(str(path),), keylogs=(str(k),) if k.exists() else (), name=path.name)


def parquet_tables(s: rttlens.CaptureSet, out: Path) -> dict:
    """`rttlens analyze FILES --format parquet -o OUT` (the single-machine
    run): its three tables."""
    cmd = [rttlens.binary(), "analyze", "--no-progress", *s.files]
    for k in s.keylogs:
        cmd += ["--keylog", k]
    subprocess.run(cmd + ["--format", "parquet", "-o", str(out)], check=True, stdin=subprocess.DEVNULL)
    return {t: pq.read_table(out / f"{t}.parquet") for t in rttlens.TABLES}


def require(program: str, package: str) -> None:
    if shutil.which(program) is None and not os.access(f"/usr/sbin/{program}", os.X_OK):
        pytest.fail(f"this test needs {program}: apt-get install -y {package}")


@pytest.fixture(scope="session")
def bench_capture(tmp_path_factory) -> Path:
    """A bench-sized capture of real traffic (bench/make-capture.sh: nginx,
    curl and tcpdump in network namespaces; ~60 MiB, ~1000 connections),
    made once and kept in target/fleet-tests (`RTTLENS_BENCH_CAPTURE`
    names another)."""
    given = os.environ.get("RTTLENS_BENCH_CAPTURE")
    if given:
        return Path(given)
    out = REPO / "target" / "fleet-tests" / "bench.pcap"
    if out.exists():
        return out
    if os.geteuid() != 0:
        pytest.fail("making the bench capture (bench/make-capture.sh) needs root: network namespaces")
    for prog, pkg in (("ip", "iproute2"), ("nginx", "nginx-light"), ("curl", "curl"), ("tcpdump", "tcpdump")):
        require(prog, pkg)
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["bash", str(REPO / "bench" / "make-capture.sh"), str(out), "--size-mb", "60", "--https", "1000", "--no-tshark"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return out


@pytest.fixture(scope="session")
def rotated_bench(bench_capture, tmp_path_factory) -> list:
    """The bench capture cut in three as a host's rotation would (editcap
    -c), so connections run across the cuts."""
    require("editcap", "wireshark-common")
    frames = int(
        subprocess.run(["capinfos", "-c", "-M", "-T", "-r", str(bench_capture)], capture_output=True, text=True, check=True)
        .stdout.split()[-1]
    )
    d = tmp_path_factory.mktemp("rotated")
    subprocess.run(["editcap", "-c", str(frames // 3 + 1), str(bench_capture), str(d / "dump.pcap")], check=True)
    parts = sorted(d.iterdir())
    assert len(parts) == 3, parts
    return parts


@pytest.fixture(scope="session")
def fleet(tmp_path_factory, rotated_bench) -> Path:
    """A fleet's directories: `hosts/NAME/` (each host's capture files and
    key logs, as `rttlens.capture_sets` reads them) and `tables/TABLE/
    NAME.parquet` (each host's single-machine run, as a shipper leaves
    them)."""
    root = tmp_path_factory.mktemp("fleet")
    sets = [capture_set(f) for f in shared_captures()]
    sets.append(rttlens.CaptureSet(files=tuple(map(str, rotated_bench)), name="bench"))
    for s in sets:
        host = re.sub(r"[^A-Za-z0-9_-]", "_", s.name)
        (root / "hosts" / host).mkdir(parents=True)
        for f in s.files + s.keylogs:
            (root / "hosts" / host / Path(f).name).symlink_to(f)
        pt = parquet_tables(s, root / "runs" / host)
        for t in rttlens.TABLES:
            (root / "tables" / t).mkdir(parents=True, exist_ok=True)
            pq.write_table(pt[t], root / "tables" / t / f"{host}.parquet")
    return root


@pytest.fixture(scope="session")
def spark():
    """A Spark session on local[2], in UTC, its Python workers this
    interpreter (with pyarrow and rttlens)."""
    if not os.environ.get("JAVA_HOME") and shutil.which("java") is None:
        pytest.fail("PySpark needs Java 17: apt-get install -y openjdk-17-jre-headless")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    s = (
        SparkSession.builder.master("local[2]")
        .appName("rttlens-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def doc_blocks(doc: str = "docs/fleet.md") -> dict:
    """The fenced blocks of a page that begin with a tag comment, `--
    ENGINE: NAME` (SQL) or `# ENGINE: NAME` (Python, shell), by
    (ENGINE, NAME)."""
    text = (REPO / doc).read_text()
    out = {}
    for body in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        m = re.match(r"(?:--|#) ([a-z]+): ([a-z0-9_-]+)\n", body)
        if m:
            out[(m.group(1), m.group(2))] = body
    return out
