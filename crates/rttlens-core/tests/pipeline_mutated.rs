//! The whole pipeline (capture → wire → flow → proto → analysis → detectors)
//! over real captures with random damage: it must never panic, and a capture
//! whose header survives must still be read up to the damage.

use std::io::Cursor;
use std::path::PathBuf;

use proptest::prelude::*;
use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline;

fn real(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/captures/itts")
        .join(name);
    std::fs::read(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (the tests need ../shared/captures)", p.display()))
}

#[derive(Debug, Clone)]
enum Damage {
    Flip { at: usize, mask: u8 },
    Overwrite { at: usize, bytes: Vec<u8> },
    Truncate { at: usize },
    Splice { from: usize, to: usize, len: usize },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), 1u8..=255).prop_map(|(at, mask)| Damage::Flip { at, mask }),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..64)
        )
            .prop_map(|(at, bytes)| Damage::Overwrite { at, bytes }),
        any::<usize>().prop_map(|at| Damage::Truncate { at }),
        (any::<usize>(), any::<usize>(), 1usize..4000).prop_map(|(from, to, len)| Damage::Splice {
            from,
            to,
            len
        }),
    ]
}

fn apply(mut data: Vec<u8>, damages: &[Damage]) -> Vec<u8> {
    // keep the 24-byte pcap header intact so the damage reaches the records
    const HDR: usize = 24;
    for d in damages {
        let n = data.len().max(HDR + 1);
        let pos = |x: usize| HDR + x % (n - HDR);
        match d {
            Damage::Flip { at, mask } => {
                let i = pos(*at);
                if i < data.len() {
                    data[i] ^= mask;
                }
            }
            Damage::Overwrite { at, bytes } => {
                let i = pos(*at);
                for (k, b) in bytes.iter().enumerate() {
                    if let Some(x) = data.get_mut(i + k) {
                        *x = *b;
                    }
                }
            }
            Damage::Truncate { at } => data.truncate(pos(*at)),
            Damage::Splice { from, to, len } => {
                let (f, t) = (pos(*from), pos(*to));
                let end = (f + len).min(data.len());
                if f < end {
                    let chunk = data[f..end].to_vec();
                    let t = t.min(data.len());
                    data.splice(t..t, chunk);
                }
            }
        }
    }
    data
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn damaged_captures_never_panic(which in 0usize..4, damages in proptest::collection::vec(damage(), 1..24)) {
        let name = ["pku.cap", "thu.cap", "pku-2.cap", "thu-2.cap"][which];
        let data = apply(real(name), &damages);
        let mut reader = CaptureReader::new(Box::new(Cursor::new(data))).expect("header kept intact");
        let mut conns = 0u64;
        let result = pipeline::run(&mut reader, &mut |c| {
            conns += u64::from(c.as_tcp().is_some());
            for f in c.findings() {
                assert!(f.cost.ms.is_finite() && f.cost.rtts.is_none_or(f64::is_finite), "{}: {:?}", f.id, f.cost);
                assert!(!f.evidence.is_empty(), "{}", f.id);
            }
        }, &mut |_| {});
        if let Ok(sum) = result {
            prop_assert_eq!(sum.connections, conns);
        }
    }
}
