"""docs/fleet.md's queries (issue 42): the p99 TLS handshake by server and
the findings by total cost, in Spark SQL, DuckDB and ClickHouse (chDB),
over a fleet of hosts (every shared capture a host, and the bench capture
cut as a rotation), each engine's answer the same and the same as
computed here from the Parquet files; the ClickHouse tables of the page
are the columns ClickHouse reads from the files; the joins with a Zeek
`conn.log` and a Suricata eve.json made from a real capture."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import REPO, capture_set, doc_blocks, parquet_tables, require, shared_captures

import rttlens


def expected_p99(root: Path) -> list:
    """The p99 table computed here: (server, handshakes, p50, p99) of the
    20 servers with the highest p99."""
    c = pq.read_table(root / "tables" / "connections").select(["tls_sni", "id.resp_h", "tls_ms", "quic_handshake_ms"])
    ms = pc.coalesce(c["tls_ms"], c["quic_handshake_ms"])
    server = pc.coalesce(c["tls_sni"], c["id.resp_h"])
    by = {}
    for s, v in zip(server.to_pylist(), ms.to_pylist()):
        if v is not None:
            by.setdefault(s, []).append(v)
    rows = []
    for s, vs in by.items():
        q = pc.quantile(pa.array(vs), q=[0.5, 0.99], interpolation="linear").to_pylist()
        rows.append((s, len(vs), q[0], q[1]))
    rows.sort(key=lambda r: (-r[3], r[0]))
    return rows[:20]


def expected_cost(root: Path) -> list:
    f = pq.read_table(root / "tables" / "findings").to_pylist()
    by = {}
    for r in f:
        e = by.setdefault(r["id"], [0, 0.0, None, set()])
        e[0] += 1
        e[1] += r["cost_ms"]
        if r["cost_rtts"] is not None:
            e[2] = (e[2] or 0.0) + r["cost_rtts"]
        e[3].add(r["uid"] + "@" + str(r["ts"]) + r["community_id"])
    rows = [(k, n, ms, rtts, len(c)) for k, (n, ms, rtts, c) in by.items()]
    rows.sort(key=lambda r: (-r[2], r[0]))
    return rows


def assert_rows(got: list, want: list, what: str) -> None:
    assert len(got) == len(want), f"{what}: {len(got)} rows, want {len(want)}:\n{got}\n{want}"
    for g, w in zip(got, want):
        assert len(g) == len(w), (what, g, w)
        for a, b in zip(g, w):
            if isinstance(b, float) or isinstance(a, float):
                assert a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9), (what, g, w)
            else:
                assert a == b, (what, g, w)


def test_fleet_has_tls_handshakes_and_findings(fleet):
    p99 = expected_p99(fleet)
    assert len(p99) >= 5 and sum(r[1] for r in p99) >= 500, p99
    assert len(expected_cost(fleet)) >= 5


def test_duckdb_queries(fleet, monkeypatch):
    import duckdb

    monkeypatch.chdir(fleet)
    blocks = doc_blocks()
    con = duckdb.connect()
    assert_rows(con.sql(blocks[("duckdb", "p99_tls")]).fetchall(), expected_p99(fleet), "duckdb p99_tls")
    assert_rows(con.sql(blocks[("duckdb", "findings_cost")]).fetchall(), expected_cost(fleet), "duckdb findings_cost")


@pytest.fixture(scope="module")
def chdb_session(fleet, tmp_path_factory):
    """One chDB session for the module: chDB's embedded server takes one data
    path per process, so a second `Session(path)` is refused."""
    from chdb import session

    s = session.Session(str(tmp_path_factory.mktemp("chdb")))
    for block in ("tables", "ingest"):
        for stmt in doc_blocks()[("clickhouse", block)].split(";"):
            body = "\n".join(x for x in stmt.splitlines() if not x.strip().startswith("--")).strip()
            if body:
                s.query(body.replace("file('tables/", f"file('{fleet}/tables/"))
    yield s
    s.close()


def _ch_rows(s, sql: str) -> list:
    import json

    out = s.query(sql, "JSONCompact").data()
    return [tuple(r) for r in json.loads(out)["data"]]


def test_clickhouse_tables_are_the_parquet_columns(fleet, chdb_session):
    """The page's MergeTree tables hold exactly the columns ClickHouse reads
    from the Parquet files (and `source`), in their order and types."""
    s = chdb_session
    for t in rttlens.TABLES:
        inferred = _ch_rows(s, f"DESCRIBE file('{fleet}/tables/{t}/*.parquet', Parquet)")
        table = _ch_rows(s, f"DESCRIBE rttlens.{t}")

        def norm(ty: str) -> str:
            return re.sub(r"\s+", "", ty).replace("LowCardinality(String)", "String")

        assert [(r[0], norm(r[1])) for r in table] == [(r[0], norm(r[1])) for r in inferred] + [("source", "String")], t
        n = _ch_rows(s, f"SELECT count() FROM rttlens.{t}")[0][0]
        assert int(n) == pq.read_table(fleet / "tables" / t).num_rows, t
    order = _ch_rows(s, "SELECT sorting_key FROM system.tables WHERE database = 'rttlens' ORDER BY name")
    assert order == [("ts, community_id",)] * 3, order


def test_clickhouse_queries(fleet, chdb_session):
    s = chdb_session
    blocks = doc_blocks()
    assert_rows(_ch_rows(s, blocks[("clickhouse", "p99_tls")]), expected_p99(fleet), "clickhouse p99_tls")
    assert_rows(_ch_rows(s, blocks[("clickhouse", "findings_cost")]), expected_cost(fleet), "clickhouse findings_cost")


def _spark_sql() -> dict:
    example = doc_blocks()[("python", "fleet_p99")]
    return {m.group(1): m.group(0) for m in re.finditer(r"-- spark: (\w+)\n.*?(?=\"\"\")", example, re.S)}


def test_spark_sql_queries(spark, fleet):
    sql = _spark_sql()
    assert set(sql) == {"p99_tls", "findings_cost"}, sql.keys()
    t = rttlens.spark.analyze(spark, rttlens.capture_sets(str(fleet / "hosts")), shards=2)
    t.connections.createOrReplaceTempView("connections")
    t.findings.createOrReplaceTempView("findings")
    assert_rows([tuple(r) for r in spark.sql(sql["p99_tls"]).collect()], expected_p99(fleet), "spark p99_tls")
    assert_rows([tuple(r) for r in spark.sql(sql["findings_cost"]).collect()], expected_cost(fleet), "spark findings_cost")


# ---- Zeek and Suricata -------------------------------------------------------

ZEEK_FIELDS = (
    "ts uid id.orig_h id.orig_p id.resp_h id.resp_p proto service duration orig_bytes resp_bytes conn_state "
    "local_orig local_resp missed_bytes history orig_pkts orig_ip_bytes resp_pkts resp_ip_bytes tunnel_parents community_id"
).split()
ZEEK_TYPES = (
    "time string addr port addr port enum string interval count count string bool bool count string count count "
    "count count set[string] string"
).split()


def tshark_connections(capture: Path) -> list:
    """Each TCP conversation of a capture as tshark sees it (`tcp.stream`):
    its first packet's time, the originator (the SYN's sender, else the
    first packet's), the bytes and packets each way, its Community ID."""
    require("tshark", "tshark")
    out = subprocess.run(
        ["tshark", "-r", str(capture), "-n", "-Y", "tcp", "--enable-protocol", "communityid", "-T", "fields",
         "-E", "separator=\t", "-e", "tcp.stream", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "ipv6.src",
         "-e", "tcp.srcport", "-e", "ip.dst", "-e", "ipv6.dst", "-e", "tcp.dstport", "-e", "tcp.len",
         "-e", "tcp.flags.syn", "-e", "tcp.flags.ack", "-e", "frame.len", "-e", "communityid"],
        capture_output=True, text=True, check=True,
    ).stdout
    conns = {}
    for line in out.splitlines():
        f = line.split("\t")
        stream, t = int(f[0]), float(f[1])
        src, sport, dst, dport = f[2] or f[3], int(f[4]), f[5] or f[6], int(f[7])
        syn_only = f[9] in ("1", "True") and f[10] not in ("1", "True")
        c = conns.get(stream)
        if c is None:
            c = conns[stream] = {"ts": t, "orig": (src, sport), "resp": (dst, dport), "last": t,
                                 "bytes": {}, "pkts": {}, "ip_bytes": {}, "cid": f[12]}
        if syn_only:
            c["orig"], c["resp"] = (src, sport), (dst, dport)
        c["last"] = t
        k = (src, sport)
        c["bytes"][k] = c["bytes"].get(k, 0) + int(f[8] or 0)
        c["pkts"][k] = c["pkts"].get(k, 0) + 1
        c["ip_bytes"][k] = c["ip_bytes"].get(k, 0) + int(f[11])
    return [conns[k] for k in sorted(conns)]


def write_conn_log(conns: list, path: Path) -> None:
    """Zeek's conn.log (TSV, as Zeek writes it: its header lines, `-` for
    unset, `(empty)` for an empty set)."""
    lines = ["#separator \\x09", "#set_separator\t,", "#empty_field\t(empty)", "#unset_field\t-", "#path\tconn",
             "#open\t2026-11-28-00-00-00", "#fields\t" + "\t".join(ZEEK_FIELDS), "#types\t" + "\t".join(ZEEK_TYPES)]
    for i, c in enumerate(conns):
        o, r = c["orig"], c["resp"]
        row = [f"{c['ts']:.6f}", f"C{i:017d}", o[0], str(o[1]), r[0], str(r[1]), "tcp", "-",
               f"{c['last'] - c['ts']:.6f}", str(c["bytes"].get(o, 0)), str(c["bytes"].get(r, 0)), "SF", "-", "-", "0",
               "-", str(c["pkts"].get(o, 0)), str(c["ip_bytes"].get(o, 0)), str(c["pkts"].get(r, 0)),
               str(c["ip_bytes"].get(r, 0)), "(empty)", c["cid"]]
        lines.append("\t".join(row))
    lines.append("#close\t2026-11-28-00-00-01")
    path.write_text("\n".join(lines) + "\n")


def write_eve(conns: list, path: Path) -> None:
    """Suricata's eve.json `flow` events (one JSON object a line)."""
    import datetime
    import json

    def t(x: float) -> str:
        return datetime.datetime.fromtimestamp(x, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+0000")

    with path.open("w") as f:
        for i, c in enumerate(conns):
            o, r = c["orig"], c["resp"]
            ev = {"timestamp": t(c["last"]), "flow_id": 1000 + i, "event_type": "flow", "src_ip": o[0], "src_port": o[1],
                  "dest_ip": r[0], "dest_port": r[1], "proto": "TCP", "app_proto": "failed", "community_id": c["cid"],
                  "flow": {"pkts_toserver": c["pkts"].get(o, 0), "pkts_toclient": c["pkts"].get(r, 0),
                           "bytes_toserver": c["ip_bytes"].get(o, 0), "bytes_toclient": c["ip_bytes"].get(r, 0),
                           "start": t(c["ts"]), "end": t(c["last"]), "age": int(c["last"] - c["ts"]), "state": "closed",
                           "reason": "timeout", "alerted": False}}
            f.write(json.dumps(ev) + "\n")


@pytest.mark.parametrize("log", ["zeek_join", "suricata_join"])
def test_joins_with_zeek_and_suricata(bench_capture, tmp_path, monkeypatch, log):
    """Every rttlens TCP connection of a real capture (the bench capture,
    ~1000 connections) joins exactly one line of a conn.log / eve.json made
    from tshark's view of the same capture, on the Community ID and the
    start."""
    import duckdb

    conns = tshark_connections(bench_capture)
    write_conn_log(conns, tmp_path / "conn.log")
    write_eve(conns, tmp_path / "eve.json")
    pt = parquet_tables(rttlens.CaptureSet(files=(str(bench_capture),)), tmp_path / "run")
    (tmp_path / "tables" / "connections").mkdir(parents=True)
    shutil.copy(tmp_path / "run" / "connections.parquet", tmp_path / "tables" / "connections" / "bench.parquet")
    monkeypatch.chdir(tmp_path)
    got = duckdb.connect().sql(doc_blocks()[("duckdb", log)]).fetchall()
    tcp = [r for r in pt["connections"].to_pylist() if r["transport"] == "tcp"]
    assert len(tcp) >= 300
    uids = [r[3] for r in got]
    assert sorted(uids) == sorted(r["uid"] for r in tcp), f"{len(uids)} joined of {len(tcp)}"
    assert len(set(uids)) == len(uids), "a connection joined twice"
