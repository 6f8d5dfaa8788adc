"""The engine: the `rttlens` binary run over a capture set, its
`--format arrow` output read as Arrow record batches (docs/schema.md).

The wheel bundles the binary (maturin's `bin` bindings) rather than binding
the engine into Python (PyO3): `rttlens analyze` already writes the three
tables as Arrow IPC, so the Python side only starts it and reads its
standard output, and every record Spark sees comes from the one code path
the command line, the Parquet files and the tests use (docs/fleet.md,
"Why a binary, not bindings").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, NamedTuple, Optional, Sequence, Tuple, Union

import pyarrow as pa
import pyarrow.ipc as ipc

#: The three tables, in the order `--format arrow` writes them.
TABLES = ("connections", "findings", "requests")

PathLike = Union[str, "os.PathLike[str]"]


class Tables(NamedTuple):
    """The three tables of an analysis (pyarrow tables, or Spark
    DataFrames from `rttlens.spark.analyze`)."""

    connections: object
    findings: object
    requests: object


@dataclass(frozen=True)
class CaptureSet:
    """One host's capture files, analysed as one (a rotated `tcpdump
    -C/-W/-G` set merged in time order, so a connection across a rotation
    stays whole), with the TLS key logs that go with them.

    `name` names the set in the `capture_set` column of the Spark tables
    (default: its first file)."""

    files: Tuple[str, ...]
    keylogs: Tuple[str, ...] = ()
    name: str = ""

    @staticmethod
    def of(item: Union["CaptureSet", PathLike, Sequence[PathLike]]) -> "CaptureSet":
        """A capture set from a path (one file), a list of paths (one
        host's rotated files) or a `CaptureSet` (as it is)."""
        if isinstance(item, CaptureSet):
            s = item
        elif isinstance(item, (str, os.PathLike)):
            s = CaptureSet(files=(os.fspath(item),))
        else:
            s = CaptureSet(files=tuple(os.fspath(p) for p in item))
        if not s.files:
            raise ValueError("a capture set needs at least one file")
        files = tuple(os.fspath(p) for p in s.files)
        keylogs = tuple(os.fspath(p) for p in s.keylogs)
        return CaptureSet(files=files, keylogs=keylogs, name=s.name or files[0])


def binary() -> str:
    """The `rttlens` binary: `$RTTLENS_BIN` when set, else the one this
    package installed (the environment's scripts directory), else the first
    on `PATH`.

    Raises `FileNotFoundError` naming where it looked."""
    env = os.environ.get("RTTLENS_BIN")
    if env:
        return env
    looked = []
    for scripts in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        p = os.path.join(scripts, "rttlens")
        looked.append(p)
        if os.access(p, os.X_OK):
            return p
    found = shutil.which("rttlens")
    if found:
        return found
    raise FileNotFoundError(
        "the rttlens binary is not installed: looked for " + ", ".join(looked)
        + " and on PATH (pip install ./python, or set RTTLENS_BIN)"
    )


def command(
    capture_set: CaptureSet,
    shard: Optional[Tuple[int, int]] = None,
    seed: int = 0,
    threads: Optional[int] = None,
) -> list:
    """The `rttlens analyze … --format arrow` command line for a capture
    set, its shard `(K, N)` (1 ≤ K ≤ N) when given."""
    cmd = [binary(), "analyze", "--no-progress", *capture_set.files]
    for k in capture_set.keylogs:
        cmd += ["--keylog", k]
    if shard is not None and shard[1] > 1:
        cmd += ["--shard", f"{shard[0]}/{shard[1]}"]
    if seed:
        cmd += ["--community-id-seed", str(seed)]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    return cmd + ["--format", "arrow"]


def _is_uri(p: str) -> bool:
    return "://" in p


def _fetch(paths: Sequence[str], into: str) -> Tuple[str, ...]:
    """`paths` as local files: an object store's (`s3://`, `gs://`,
    `hdfs://`, `file://`…, through pyarrow.fs and its credentials) copied
    into `into` first; a local path as it is."""
    from pyarrow import fs as pafs

    out = []
    for i, p in enumerate(paths):
        if not _is_uri(p):
            out.append(p)
            continue
        fs, path = pafs.FileSystem.from_uri(p)
        local = os.path.join(into, f"{i}-{os.path.basename(path)}")
        with fs.open_input_stream(path) as src, open(local, "wb") as dst:
            while True:
                chunk = src.read(1 << 22)
                if not chunk:
                    break
                dst.write(chunk)
        out.append(local)
    return tuple(out)


def batches(
    capture_set: CaptureSet,
    shard: Optional[Tuple[int, int]] = None,
    seed: int = 0,
    threads: Optional[int] = None,
) -> Iterator[Tuple[str, pa.RecordBatch]]:
    """Runs the engine on `capture_set` and yields each record batch with
    its table's name, as they come: the connections first (while the
    capture is read), then the findings and the requests. Files named by
    URI (`s3://bucket/host1/dump.pcap0`) are copied to a temporary
    directory first (the engine reads local files).

    Raises `RuntimeError` with the engine's message when it fails."""
    with tempfile.TemporaryDirectory(prefix="rttlens-") as tmp:
        if any(_is_uri(p) for p in capture_set.files + capture_set.keylogs):
            capture_set = CaptureSet(
                files=_fetch(capture_set.files, tmp),
                keylogs=_fetch(capture_set.keylogs, tmp),
                name=capture_set.name,
            )
        yield from _run(command(capture_set, shard, seed, threads))


def _run(cmd: list) -> Iterator[Tuple[str, pa.RecordBatch]]:
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err)
        try:
            for table in TABLES:
                try:
                    reader = ipc.open_stream(proc.stdout)
                except pa.ArrowInvalid:
                    break  # the engine failed before this table: its status says why
                for b in reader:
                    yield table, b
        finally:
            proc.stdout.close()
            status = proc.wait()
        if status != 0:
            err.seek(0)
            msg = err.read().decode("utf-8", "replace").strip()
            raise RuntimeError(f"{' '.join(cmd)} exited with {status}: {msg}")


def capture_sets(root: str) -> list:
    """The capture sets under `root` (a directory, or an object store's
    prefix such as `s3://bucket/2026-11-28/`), one per host: each directory
    directly under it is a host, and its files (sorted by name, at any
    depth) are one set, `*.keylog` files its TLS key logs; the set's name
    is the directory's. Files directly under `root` are a set each."""
    from pyarrow import fs as pafs

    if _is_uri(root):
        fs, base = pafs.FileSystem.from_uri(root)
        scheme = root[: root.index("://") + 3]

        def name(p: str) -> str:
            return scheme + p

    else:
        fs, base = pafs.LocalFileSystem(), os.path.abspath(root)

        def name(p: str) -> str:
            return p

    base = base.rstrip("/")
    by_host = {}
    for info in fs.get_file_info(pafs.FileSelector(base, recursive=True)):
        if info.type != pafs.FileType.File or os.path.basename(info.path).startswith("."):
            continue
        rel = info.path[len(base) + 1 :]
        host = rel.split("/", 1)[0] if "/" in rel else rel
        by_host.setdefault(host, []).append(info.path)
    sets = []
    for host in sorted(by_host):
        files = sorted(by_host[host])
        caps = tuple(name(f) for f in files if not f.endswith(".keylog"))
        keys = tuple(name(f) for f in files if f.endswith(".keylog"))
        if caps:
            sets.append(CaptureSet(files=caps, keylogs=keys, name=host))
    return sets


def schemas() -> dict:
    """The three tables' Arrow schemas, as the engine writes them: read
    from its output on an empty capture (a pcap header without packets)."""
    with tempfile.TemporaryDirectory() as d:
        empty = Path(d) / "empty.pcap"
        # pcap: magic, version 2.4, zone, sigfigs, snaplen 65535, Ethernet
        empty.write_bytes(
            bytes.fromhex("d4c3b2a1" "0200" "0400" "00000000" "00000000" "ffff0000" "01000000")
        )
        out = subprocess.run(
            command(CaptureSet.of(empty)), stdin=subprocess.DEVNULL, capture_output=True, check=True
        ).stdout
    src = pa.BufferReader(out)
    got = {}
    for t in TABLES:
        r = ipc.open_stream(src)
        r.read_all()  # to its end marker, where the next stream begins
        got[t] = r.schema
    return got


def analyze(
    capture_set: Union[CaptureSet, PathLike, Sequence[PathLike]],
    shard: Optional[Tuple[int, int]] = None,
    seed: int = 0,
    threads: Optional[int] = None,
) -> Tables:
    """The three tables of one capture set (a path, a list of one host's
    rotated files, or a `CaptureSet`) as pyarrow tables, on this machine."""
    s = CaptureSet.of(capture_set)
    got = {t: [] for t in TABLES}
    for t, b in batches(s, shard, seed, threads):
        got[t].append(b)
    sch = schemas() if any(not v for v in got.values()) else {}
    return Tables(
        *(
            pa.Table.from_batches(got[t], schema=got[t][0].schema if got[t] else sch[t])
            for t in TABLES
        )
    )
