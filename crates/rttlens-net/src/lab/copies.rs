//! Partial copies of a lab capture, the way captures from the wild come:
//! tcpdump started after the connection was up ([`Cut::AfterHandshake`]),
//! or only one direction on the wire ([`Cut::FromHost`]: asymmetric
//! routing, a `src host` filter, a one-way SPAN port). The scenarios'
//! variants analyse these copies and compare them with the full capture.
//!
//! Reading and writing pcap records is pcap-parser's (`serialize` writes
//! the classic little-endian format); the packets are read with etherparse.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use etherparse::{InternetSlice, SlicedPacket, TransportSlice};
use pcap_parser::{Linktype, PcapCapture, ToVec};

use super::LabError;

/// Which frames a copy keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// From the first TCP segment that carries payload on: the first
    /// connection's three-way handshake (SYN, SYN-ACK, ACK) is gone, as
    /// when tcpdump starts once the connection is up.
    AfterHandshake,
    /// Only the packets this address sent.
    FromHost(IpAddr),
}

/// A copy written to disk.
#[derive(Debug, Clone)]
pub struct CaptureCopy {
    /// The copy (classic pcap).
    pub path: PathBuf,
    /// `origin[i]` is the original frame number of the copy's frame `i + 1`
    /// (both 1-based, Wireshark's numbering).
    pub origin: Vec<u64>,
}

impl CaptureCopy {
    /// The original frame number of the copy's `frame` (1-based).
    pub fn original(&self, frame: u64) -> Option<u64> {
        let i = usize::try_from(frame.checked_sub(1)?).ok()?;
        self.origin.get(i).copied()
    }
}

/// What a frame is, as far as the cut needs it.
struct Seen {
    src: Option<IpAddr>,
    tcp_payload: bool,
}

fn look(linktype: Linktype, data: &[u8]) -> Seen {
    let sliced = match linktype {
        Linktype::ETHERNET => SlicedPacket::from_ethernet(data),
        Linktype::LINUX_SLL => SlicedPacket::from_linux_sll(data),
        _ => SlicedPacket::from_ip(data),
    };
    let Ok(p) = sliced else {
        return Seen {
            src: None,
            tcp_payload: false,
        };
    };
    let src = match &p.net {
        Some(InternetSlice::Ipv4(v4)) => Some(IpAddr::V4(v4.header().source_addr())),
        Some(InternetSlice::Ipv6(v6)) => Some(IpAddr::V6(v6.header().source_addr())),
        _ => None,
    };
    let tcp_payload =
        matches!(&p.transport, Some(TransportSlice::Tcp(t)) if !t.payload().is_empty());
    Seen { src, tcp_payload }
}

/// Write the frames of the classic pcap `from` that `cut` keeps to `to`.
///
/// # Errors
/// [`LabError::Io`] when a file cannot be read or written;
/// [`LabError::Analysis`] when `from` is not a classic pcap.
pub fn copy(from: &Path, to: &Path, cut: Cut) -> Result<CaptureCopy, LabError> {
    let io = |what: &str, p: &Path| {
        let context = format!("{what} {}", p.display());
        move |source| LabError::Io { context, source }
    };
    let bytes = std::fs::read(from).map_err(io("reading", from))?;
    let cap = PcapCapture::from_file(&bytes).map_err(|e| {
        LabError::Analysis(format!("{}: not a classic pcap: {e:?}", from.display()))
    })?;
    let serialize = |e| LabError::Analysis(format!("writing a pcap record: {e:?}"));
    let mut out = cap.header.clone().to_vec_raw().map_err(serialize)?;
    let mut origin = Vec::new();
    let mut started = false;
    for (i, rec) in cap.blocks.iter().enumerate() {
        let seen = look(cap.header.network, rec.data);
        let keep = match cut {
            Cut::AfterHandshake => {
                started |= seen.tcp_payload;
                started
            }
            Cut::FromHost(ip) => seen.src == Some(ip),
        };
        if keep {
            out.extend(rec.to_vec_raw().map_err(serialize)?);
            origin.push(i as u64 + 1);
        }
    }
    std::fs::write(to, out).map_err(io("writing", to))?;
    Ok(CaptureCopy {
        path: to.to_path_buf(),
        origin,
    })
}
