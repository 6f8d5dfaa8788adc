//! `--format parquet -o DIR --rotate` (issue 42): a series of closed
//! Parquet files, a directory per table, never half a file in view. By
//! size on a capture file (the files' rows together are the unrotated
//! run's); by period on a live interface, a veth pair between two network
//! namespaces, while real TCP connections run (needs root and iproute2:
//! FAILS naming what is missing).

mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use common::veth::{Pair, A_IF, SERVER};
use common::{analyze_ok, bin, public_capture, scratch};

const TABLES: [&str; 3] = ["connections", "findings", "requests"];

/// The batches of a Parquet file, which must be complete (a half file
/// has no footer and fails here).
fn read(path: &Path) -> Vec<RecordBatch> {
    let f = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap_or_else(|e| panic!("{} is not a complete Parquet file: {e}", path.display()))
        .build()
        .expect("reader")
        .map(|b| b.expect("batch"))
        .collect()
}

/// The `uid` column of some batches, in order.
fn uids(batches: &[RecordBatch]) -> Vec<String> {
    batches
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name("uid").expect("uid").as_string::<i32>();
            (0..c.len())
                .map(|i| c.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The files of a table's directory, sorted: (complete ones, hidden
/// partial ones).
fn files(dir: &Path, table: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut done = Vec::new();
    let mut partial = Vec::new();
    for e in std::fs::read_dir(dir.join(table)).expect("the table's directory") {
        let p = e.expect("entry").path();
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if name.starts_with('.') && name.ends_with(".parquet.partial") {
            partial.push(p);
        } else {
            assert!(
                name.ends_with(".parquet"),
                "an unexpected file {}",
                p.display()
            );
            done.push(p);
        }
    }
    done.sort();
    partial.sort();
    (done, partial)
}

#[test]
fn rotating_by_size_splits_the_rows_over_closed_files() {
    let f = public_capture("ws_http-with-jpegs.cap");
    let whole = scratch("rotate-whole");
    analyze_ok([
        f.as_os_str(),
        "--format".as_ref(),
        "parquet".as_ref(),
        "-o".as_ref(),
        whole.as_os_str(),
    ]);
    let dir = scratch("rotate-size");
    analyze_ok([
        f.as_os_str(),
        "--format".as_ref(),
        "parquet".as_ref(),
        "-o".as_ref(),
        dir.as_os_str(),
        "--rotate".as_ref(),
        "1kB".as_ref(),
    ]);
    for t in TABLES {
        let (done, partial) = files(&dir, t);
        assert!(partial.is_empty(), "{t}: partial files left: {partial:?}");
        assert!(done.len() >= 3, "{t}: {} files", done.len());
        // named by the UTC second they began, then -1, -2… within it
        for p in &done {
            let name = p.file_stem().and_then(|n| n.to_str()).expect("name");
            let stamp = name.split('-').next().expect("stamp");
            assert!(
                stamp.len() == 16 && stamp.as_bytes()[8] == b'T' && stamp.ends_with('Z'),
                "{name}"
            );
        }
        let rotated: Vec<RecordBatch> = done.iter().flat_map(|p| read(p)).collect();
        let want = read(&whole.join(format!("{t}.parquet")));
        let mut a = uids(&rotated);
        let mut b = uids(&want);
        a.sort();
        b.sort();
        assert_eq!(a, b, "{t}: the rotated files' rows are the whole run's");
    }
}

#[test]
fn rotate_needs_parquet() {
    let f = public_capture("ws_http-with-jpegs.cap");
    let out = bin()
        .args(["analyze", "--no-progress"])
        .arg(&f)
        .args(["--format", "jsonl", "--rotate", "5m"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--rotate") && err.contains("--format parquet"),
        "{err}"
    );
    let bad = bin()
        .args(["analyze", "--no-progress"])
        .arg(&f)
        .args([
            "--format",
            "parquet",
            "-o",
            "/tmp/x",
            "--rotate",
            "5 parsecs",
        ])
        .output()
        .expect("run");
    assert_eq!(bad.status.code(), Some(2));
}

/// `rttlens analyze -i IFACE --format parquet -o DIR --rotate 2s` while
/// connections come every ~0.7 s: the files close every 2 s of wall-clock
/// time (a quiet stretch of 4.5 s included), every `*.parquet` seen in the
/// directories while it runs is complete, and at the end the files hold
/// every connection once, no partial file left.
#[test]
fn live_rotation_closes_files_on_time_and_never_shows_half_a_file() {
    let pair = Pair::new();
    let (a, b) = (&pair.a, &pair.b);
    let dir = scratch("rotate-live");
    let _ = std::fs::remove_dir_all(&dir);
    let mut cmd = bin();
    cmd.args(["analyze", "-i", A_IF, "--format", "parquet", "-o"])
        .arg(&dir)
        .args(["--rotate", "2s", "--duration", "11s", "--no-progress"]);
    let mut live = a
        .command(&cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run rttlens analyze -i");
    let started = Instant::now();
    let conns = 6;
    let (tx, rx) = std::sync::mpsc::channel();
    let server = b.spawn_thread(move || -> std::io::Result<()> {
        let l = TcpListener::bind(SERVER)?;
        let _ = tx.send(());
        for _ in 0..conns {
            let (mut s, _) = l.accept()?;
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf)?;
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")?;
        }
        Ok(())
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("the server listens");
    std::thread::sleep(Duration::from_millis(500));
    let mut seen_complete = 0;
    for i in 0..conns {
        a.run(|| -> std::io::Result<()> {
            let addr: SocketAddr = SERVER.parse().expect("addr");
            let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(3))?;
            s.set_read_timeout(Some(Duration::from_secs(3)))?;
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")?;
            let mut out = Vec::new();
            s.read_to_end(&mut out)?;
            Ok(())
        })
        .expect("enter a")
        .expect("a request");
        // a quiet stretch after the third, longer than two periods: a
        // whole period without a connection still closes its files
        let pause = if i == 2 { 4_500 } else { 700 };
        let until = Instant::now() + Duration::from_millis(pause);
        while Instant::now() < until {
            for t in TABLES {
                if dir.join(t).exists() {
                    for p in files(&dir, t).0 {
                        read(&p);
                        seen_complete += 1;
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    server
        .join()
        .expect("server thread")
        .and_then(|r| r)
        .expect("server");
    let status = live.wait().expect("wait");
    let mut err = String::new();
    if let Some(mut e) = live.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "analyze -i: {status:?}: {err}");
    let took = started.elapsed();
    assert!(seen_complete > 0, "no closed file appeared while it ran");
    for t in TABLES {
        let (done, partial) = files(&dir, t);
        assert!(partial.is_empty(), "{t}: partial files left: {partial:?}");
        // 11 s in 2 s periods: 6 or 7 files (the first and last partial)
        assert!(
            (6..=7).contains(&done.len()),
            "{t}: {} files in {took:?}: {done:?}",
            done.len()
        );
    }
    let (done, _) = files(&dir, "connections");
    let rows: Vec<RecordBatch> = done.iter().flat_map(|p| read(p)).collect();
    let mut got = uids(&rows);
    got.sort();
    got.dedup();
    assert_eq!(got.len(), conns, "every connection once: {got:?}");
    // a file with no connection (the quiet stretch) is still a closed file
    assert!(
        done.iter()
            .any(|p| read(p).iter().map(RecordBatch::num_rows).sum::<usize>() == 0),
        "a period without a connection gives an empty file: {done:?}"
    );
}
