//! `--format parquet` and `--format arrow` (issue 42): on every shared
//! capture, the tables have the rows of the JSON Lines output (one per
//! connection line, per finding, per request or stream) and the same
//! values, read back with the parquet crate; the Arrow stream holds the
//! same tables; docs/schema.md documents every column with its unit.

mod common;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rttlens_columnar::{Table, SCHEMA_VERSION, TABLE_KEY, UNIT_KEY, VERSION_KEY};
use serde_json::Value;

use common::{analyze_ok, capture, public_capture, scratch};

/// Every capture of the shared corpus (public and itts), sorted.
fn shared_captures() -> Vec<PathBuf> {
    let mut all = Vec::new();
    for d in [public_capture("SOURCES.md"), capture("pku.cap")] {
        let dir = d.parent().expect("captures directory").to_path_buf();
        for f in std::fs::read_dir(&dir).expect("read_dir") {
            let f = f.expect("entry").path();
            if f.extension()
                .is_some_and(|x| x == "pcap" || x == "cap" || x == "pcapng")
            {
                all.push(f);
            }
        }
    }
    all.sort();
    all
}

/// The capture and its key log, when one lies beside it.
fn args_of(f: &Path) -> Vec<std::ffi::OsString> {
    let mut v = vec![f.as_os_str().to_owned()];
    let k = f.with_extension("keylog");
    if k.exists() {
        v.push("--keylog".into());
        v.push(k.into_os_string());
    }
    v
}

/// The connection lines of the JSON Lines output.
fn jsonl(args: &[std::ffi::OsString]) -> Vec<Value> {
    let mut a = args.to_vec();
    a.extend(["--format".into(), "jsonl".into()]);
    String::from_utf8(analyze_ok(&a))
        .expect("utf-8")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|v| v["type"] == "connection")
        .collect()
}

/// A Parquet file's batches.
fn read_parquet(path: &Path) -> Vec<RecordBatch> {
    let f = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let r = ParquetRecordBatchReaderBuilder::try_new(f)
        .expect("a Parquet file")
        .build()
        .expect("reader");
    r.map(|b| b.expect("batch")).collect()
}

/// One row of a batch, by column name, as a JSON value (numbers, text,
/// null; lists of numbers; a map's keys as a list).
fn cell(b: &RecordBatch, name: &str, row: usize) -> Value {
    let col = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    if col.is_null(row) {
        return Value::Null;
    }
    use arrow_schema::DataType as D;
    match col.data_type() {
        D::Utf8 => Value::from(col.as_string::<i32>().value(row)),
        D::Int64 => Value::from(col.as_primitive::<Int64Type>().value(row)),
        D::Int32 => Value::from(col.as_primitive::<Int32Type>().value(row)),
        D::Float64 => Value::from(col.as_primitive::<Float64Type>().value(row)),
        D::Boolean => Value::from(col.as_boolean().value(row)),
        D::List(_) => {
            let items = col.as_list::<i32>().value(row);
            match items.data_type() {
                D::Int64 => items
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(Value::from)
                    .collect(),
                D::Utf8 => items.as_string::<i32>().iter().map(Value::from).collect(),
                t => panic!("{name}: list of {t}"),
            }
        }
        D::Map(_, _) => {
            let m = col.as_map().value(row);
            m.column(0)
                .as_string::<i32>()
                .iter()
                .map(Value::from)
                .collect()
        }
        t => panic!("{name}: {t}"),
    }
}

/// Rows of `batches` keyed by `key(batch, row)`.
fn rows_by(
    batches: &[RecordBatch],
    key: impl Fn(&RecordBatch, usize) -> String,
) -> HashMap<String, (&RecordBatch, usize)> {
    let mut m = HashMap::new();
    for b in batches {
        for r in 0..b.num_rows() {
            assert!(m.insert(key(b, r), (b, r)).is_none(), "a key twice");
        }
    }
    m
}

fn close(a: &Value, b: &Value, what: &str) {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => assert!(
            (x - y).abs() <= 1e-6 * x.abs().max(1.0),
            "{what}: {a} ≠ {b}"
        ),
        _ => assert_eq!(a, b, "{what}"),
    }
}

/// On every shared capture: the Parquet tables' row counts are the JSON
/// Lines' (connection lines, their findings, their requests and HTTP/3
/// streams), and every row's values are the JSON record's.
#[test]
fn parquet_rows_are_the_jsonl_records() {
    let (mut conns, mut findings, mut requests) = (0, 0, 0);
    for f in shared_captures() {
        let args = args_of(&f);
        let lines = jsonl(&args);
        let dir = scratch(&format!("pq-{}", f.file_name().unwrap().to_string_lossy()));
        let mut a = args.clone();
        a.extend([
            "--format".into(),
            "parquet".into(),
            "-o".into(),
            dir.clone().into(),
        ]);
        assert!(analyze_ok(&a).is_empty(), "nothing on standard output");
        let tables: HashMap<Table, Vec<RecordBatch>> = Table::ALL
            .into_iter()
            .map(|t| (t, read_parquet(&rttlens_columnar_path(&dir, t))))
            .collect();
        let n = |t: Table| tables[&t].iter().map(|b| b.num_rows()).sum::<usize>();
        let at = f.display();
        let want_findings: usize = lines
            .iter()
            .map(|c| c["findings"].as_array().unwrap().len())
            .sum();
        let want_requests: usize = lines
            .iter()
            .map(|c| {
                c["requests"].as_array().map_or(0, Vec::len)
                    + c["streams"].as_array().map_or(0, Vec::len)
            })
            .sum();
        assert_eq!(n(Table::Connections), lines.len(), "{at}: connections");
        assert_eq!(n(Table::Findings), want_findings, "{at}: findings");
        assert_eq!(n(Table::Requests), want_requests, "{at}: requests");
        let uid = |b: &RecordBatch, r: usize| cell(b, "uid", r).as_str().unwrap().to_string();
        let c_rows = rows_by(&tables[&Table::Connections], uid);
        let f_rows = rows_by(&tables[&Table::Findings], |b, r| {
            format!("{}/{}", uid(b, r), cell(b, "rank", r))
        });
        let q_rows = rows_by(&tables[&Table::Requests], |b, r| {
            format!("{}/{}", uid(b, r), cell(b, "index", r))
        });
        for c in &lines {
            let u = format!("{}-{}", c["transport"].as_str().unwrap(), c["index"]);
            let (b, r) = c_rows[&u];
            let what = |k: &str| format!("{at}: {u} {k}");
            let quic = c["transport"] == "quic";
            for (col, json) in [
                ("community_id", c["community_id"].clone()),
                ("index", c["index"].clone()),
                ("first_frame", c["first_frame"].clone()),
                ("last_frame", c["last_frame"].clone()),
                ("start_s", c["start_s"].clone()),
                ("rtt_min_ms", c["rtt"]["min_ms"].clone()),
                (
                    "orig_bytes",
                    if quic {
                        c["bytes"][0].clone()
                    } else {
                        c["tcp"]["bytes"][0].clone()
                    },
                ),
                (
                    "resp_bytes",
                    if quic {
                        c["bytes"][1].clone()
                    } else {
                        c["tcp"]["bytes"][1].clone()
                    },
                ),
                (
                    "findings",
                    Value::from(c["findings"].as_array().unwrap().len()),
                ),
            ] {
                close(&cell(b, col, r), &json, &what(col));
            }
            close(
                &Value::from(cell(b, "duration", r).as_f64().unwrap() * 1000.0),
                &c["duration_ms"],
                &what("duration"),
            );
            if !quic {
                close(
                    &cell(b, "rtt_median_ms", r),
                    &c["rtt"]["median_ms"],
                    &what("median"),
                );
                close(&cell(b, "tls_sni", r), &c["tls"]["sni"], &what("sni"));
            }
            for p in c["ladder"].as_array().unwrap() {
                let name = p["name"].as_str().unwrap().replace('-', "_");
                close(&cell(b, &format!("{name}_ms"), r), &p["ms"], &what(&name));
            }
            let cost: f64 = c["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["cost"]["ms"].as_f64().unwrap())
                .sum();
            close(&cell(b, "cost_ms", r), &Value::from(cost), &what("cost_ms"));
            for (rank, x) in c["findings"].as_array().unwrap().iter().enumerate() {
                let (b, r) = f_rows[&format!("{u}/{rank}")];
                let what = |k: &str| format!("{at}: {u} finding {rank} {k}");
                close(&cell(b, "id", r), &x["id"], &what("id"));
                close(&cell(b, "cost_ms", r), &x["cost"]["ms"], &what("cost_ms"));
                close(
                    &cell(b, "cost_rtts", r),
                    &x["cost"]["rtts"],
                    &what("cost_rtts"),
                );
                close(
                    &cell(b, "confidence", r),
                    &x["confidence"]["level"],
                    &what("confidence"),
                );
                let frames: Vec<Value> = x["evidence"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e["frame"].clone())
                    .collect();
                assert_eq!(
                    cell(b, "evidence_frames", r),
                    Value::from(frames),
                    "{}",
                    what("frames")
                );
                let keys: Vec<Value> = x["facts"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .map(|k| Value::from(k.as_str()))
                    .collect();
                let mut got = cell(b, "facts", r).as_array().unwrap().clone();
                let mut want = keys;
                got.sort_by_key(|v| v.to_string());
                want.sort_by_key(|v| v.to_string());
                assert_eq!(got, want, "{}", what("facts"));
                findings += 1;
            }
            let reqs = c["requests"].as_array().or(c["streams"].as_array());
            for (i, q) in reqs.into_iter().flatten().enumerate() {
                let (b, r) = q_rows[&format!("{u}/{i}")];
                let what = |k: &str| format!("{at}: {u} request {i} {k}");
                close(&cell(b, "method", r), &q["method"], &what("method"));
                close(&cell(b, "status", r), &q["status"], &what("status"));
                close(&cell(b, "ttfb_ms", r), &q["ttfb_ms"], &what("ttfb_ms"));
                close(
                    &cell(b, "request_frame", r),
                    &q["request_frame"],
                    &what("request_frame"),
                );
                requests += 1;
            }
            conns += 1;
        }
    }
    // the corpus has all three kinds
    assert!(
        conns >= 80 && findings >= 100 && requests >= 50,
        "{conns} {findings} {requests}"
    );
}

fn rttlens_columnar_path(dir: &Path, t: Table) -> PathBuf {
    dir.join(format!("{}.parquet", t.name()))
}

/// `--format arrow`: three IPC streams on standard output, connections,
/// findings, requests, each named in its schema's metadata and versioned,
/// with the Parquet files' rows.
#[test]
fn arrow_stream_holds_the_three_tables() {
    let f = public_capture("zeek_http-bro-org.pcap");
    let out = analyze_ok([f.as_os_str(), "--format".as_ref(), "arrow".as_ref()]);
    let dir = scratch("arrow-vs-parquet");
    analyze_ok([
        f.as_os_str(),
        "--format".as_ref(),
        "parquet".as_ref(),
        "-o".as_ref(),
        dir.as_os_str(),
    ]);
    let mut input = std::io::Cursor::new(out);
    for t in Table::ALL {
        let r = arrow_ipc::reader::StreamReader::try_new(&mut input, None).expect("a stream");
        let schema = r.schema();
        assert_eq!(schema.metadata()[TABLE_KEY], t.name());
        assert_eq!(schema.metadata()[VERSION_KEY], SCHEMA_VERSION.to_string());
        let rows: usize = r.map(|b| b.expect("batch").num_rows()).sum();
        let want: usize = read_parquet(&rttlens_columnar_path(&dir, t))
            .iter()
            .map(|b| b.num_rows())
            .sum();
        assert_eq!(rows, want, "{}", t.name());
    }
    assert_eq!(
        input.position() as usize,
        input.get_ref().len(),
        "nothing after the third stream"
    );
}

/// Every column of every table is in docs/schema.md, in its table's
/// section, with the unit its field's metadata gives.
#[test]
fn schema_doc_lists_every_column_with_its_unit() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema.md"))
            .expect("docs/schema.md");
    assert!(doc.contains(&format!("schema version {SCHEMA_VERSION}")));
    for t in Table::ALL {
        let section = doc
            .split("\n## ")
            .find(|s| s.starts_with(&format!("`{}`", t.name())))
            .unwrap_or_else(|| panic!("no section ## `{}`", t.name()));
        for field in t.schema().fields() {
            let unit = &field.metadata()[UNIT_KEY];
            let row = format!("| `{}` |", field.name());
            let line = section
                .lines()
                .find(|l| l.starts_with(&row))
                .unwrap_or_else(|| panic!("{}: no row for `{}`", t.name(), field.name()));
            assert!(
                line.contains(&format!("| {unit} |")),
                "{}: `{}` should say its unit `{unit}`: {line}",
                t.name(),
                field.name()
            );
        }
    }
}
