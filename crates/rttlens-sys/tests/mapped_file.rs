//! `MappedFile` maps a regular file and nothing else, and giving pages
//! back or prefetching never changes the bytes read.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use rttlens_sys::MappedFile;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rttlens-sys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

#[test]
fn a_regular_file_is_mapped_and_reads_the_same_after_release() {
    let path = scratch("bytes");
    // 3 MiB and a bit: several pages, a partial last one
    let bytes: Vec<u8> = (0..(3 << 20) + 123)
        .map(|i: u32| (i * 7 + i / 4096) as u8)
        .collect();
    std::fs::write(&path, &bytes).expect("write");
    let map = MappedFile::map(&File::open(&path).expect("open"))
        .expect("map")
        .expect("a regular file is mapped");
    assert_eq!(map.bytes(), &bytes[..]);
    for at in [
        0,
        1,
        4095,
        4096,
        1 << 20,
        (2 << 20) + 77,
        bytes.len(),
        usize::MAX,
    ] {
        map.prefetch(at);
        map.release_before(at);
        assert_eq!(map.bytes(), &bytes[..], "after giving back {at}");
    }
    std::fs::remove_file(&path).expect("rm");
}

#[test]
fn empty_files_and_fifos_are_not_mapped() {
    let empty = scratch("empty");
    std::fs::write(&empty, b"").expect("write");
    assert!(MappedFile::map(&File::open(&empty).expect("open"))
        .expect("fstat")
        .is_none());
    let fifo = scratch("fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(made.success());
    // non-blocking: opening a FIFO's read end waits for a writer otherwise
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .expect("open fifo");
    assert!(MappedFile::map(&f).expect("fstat").is_none());
    std::fs::remove_file(&fifo).expect("rm");
    std::fs::remove_file(&empty).expect("rm");
}
