//! Cross-check with Wireshark on captures nobody here made (issue 21): the
//! engine's per-frame marks against tshark's `tcp.analysis.*` flags, frame
//! by frame, on every capture of the public corpus
//! (`../shared/captures/public/`, docs/corpus.md). Prints the table per
//! capture and class; asserts ≥ 95 % agreement per class once the intended
//! differences are counted apart (each explained in docs/wireshark.md), and
//! identical frames for the facts of the packet (zero windows, a sequence
//! number beyond the highest seen).
//!
//! Needs `tshark` (`scripts/deps test` installs it) and the corpus; FAILS
//! (never skips) naming what is missing.

#[path = "support/wireshark.rs"]
mod wireshark;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use wireshark::{check_totals, compare, print_header, tally, Tally};

/// Agreement required per class, intended differences apart.
const MIN_AGREEMENT: f64 = 0.95;

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/captures/public");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "the public corpus {} is missing ({e}): CI copies ../shared beside the repository",
            dir.display()
        )
    });
    let mut v: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|x| ["pcap", "pcapng", "cap"].contains(&x.to_string_lossy().as_ref()))
        })
        .collect();
    v.sort();
    assert!(
        v.len() >= 25,
        "only {} captures in {}",
        v.len(),
        dir.display()
    );
    v
}

#[test]
fn agreement_with_wireshark_on_the_public_corpus() {
    assert!(
        std::process::Command::new("tshark")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "tshark is not installed: run scripts/deps test (Debian package tshark)"
    );
    let mut total: BTreeMap<&str, Tally> = BTreeMap::new();
    let (mut ooo, mut copies, mut gap_twice) = (0, 0, 0);
    let mut problems = Vec::new();
    print_header();
    for cap in corpus() {
        let name = cap.file_name().expect("name").to_string_lossy().to_string();
        let c = compare(&cap);
        ooo += c.out_of_order;
        copies += c.copies;
        gap_twice += c.gap_twice;
        tally(&name, &c, &mut total, &mut problems);
    }
    check_totals(&total, MIN_AGREEMENT, &mut problems);
    eprintln!(
        "  counted apart: {ooo} retransmissions Wireshark calls out-of-order, \
         {copies} retransmissions and duplicate ACKs on frames captured twice, \
         {gap_twice} gaps Wireshark flags again at the next segment"
    );
    // the classes must have something to agree on, or the check says nothing
    for class in ["retransmission", "duplicate_ack", "zero_window"] {
        assert!(
            total[class].both >= 20,
            "{class}: only {} frames both flag on the corpus",
            total[class].both
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
