//! The reader hands frames to other threads without copying them
//! (`CaptureReader::next_shared`): a shared frame must keep its bytes while
//! the reader goes on through the file, and give the bytes `next_frame`
//! gives, on real captures, plain and gzip'd, and on a set of files.

use rttlens_core::capture::{CaptureReader, CaptureSet, Chunk, FrameSource};
use std::io::Write;
use std::path::PathBuf;

fn capture(name: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/itts")
        .join(name);
    assert!(
        p.exists(),
        "{} is missing: the tests need ../shared/captures beside the repository",
        p.display()
    );
    p
}

/// Every frame's bytes as `next_frame` gives them.
fn copied(mut r: impl FrameSource) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(f) = r.next_frame().expect("read") {
        out.push((f.number, f.data.to_vec()));
    }
    out
}

/// Every frame as a share of the reader's buffer, all kept to the end.
fn shared(mut r: impl FrameSource) -> Vec<(u64, Chunk, usize, usize)> {
    let mut out = Vec::new();
    while let Some((f, s)) = r.next_shared().expect("read") {
        let s = s.expect("a capture reader shares its frames");
        assert_eq!(s.bytes(), f.data, "frame {}", f.number);
        out.push((f.number, s.chunk.clone(), s.start, s.len));
    }
    out
}

fn same(want: &[(u64, Vec<u8>)], got: &[(u64, Chunk, usize, usize)]) {
    assert_eq!(want.len(), got.len());
    assert!(want.len() > 100);
    for ((n, bytes), (m, chunk, start, len)) in want.iter().zip(got) {
        assert_eq!(n, m);
        assert_eq!(
            &chunk.bytes()[*start..start + len],
            &bytes[..],
            "frame {n} changed after it was shared"
        );
    }
}

#[test]
fn shared_frames_keep_their_bytes_while_the_reader_goes_on() {
    for name in ["pku.cap", "thu.cap"] {
        let path = capture(name);
        let open = || CaptureReader::open(&path).expect("open");
        same(&copied(open()), &shared(open()));
        // gzip: the decompressed stream goes through the same buffers
        let raw = std::fs::read(&path).expect("read");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&raw).expect("gzip");
        let gz = gz.finish().expect("gzip");
        let open_gz =
            || CaptureReader::new(Box::new(std::io::Cursor::new(gz.clone()))).expect("open gz");
        same(&copied(open_gz()), &shared(open_gz()));
    }
    // a set of two files, merged in time order
    let set = || {
        let mut s = CaptureSet::default();
        s.add(&capture("pku.cap")).expect("add");
        s.add(&capture("thu.cap")).expect("add");
        s
    };
    same(&copied(set()), &shared(set()));
}
