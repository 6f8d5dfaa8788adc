//! Partial copies of a lab capture, the way captures from the wild come:
//! tcpdump started after the connection was up ([`Cut::AfterHandshake`]),
//! or only one direction on the wire ([`Cut::FromHost`]: asymmetric
//! routing, a `src host` filter, a one-way SPAN port), and the capture an
//! end host with receive offload on would have taken ([`coalesce`]: GRO).
//! The scenarios' variants analyse these copies and compare them with the
//! full capture.
//!
//! Reading and writing pcap records is pcap-parser's (`serialize` writes
//! the classic little-endian format); the packets are read with etherparse.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use etherparse::{InternetSlice, SlicedPacket, TransportSlice};
use pcap_parser::{Linktype, PcapCapture, ToVec};

use rttlens_lab_net::LabError;

/// Which frames a copy keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// From the first TCP segment that carries payload on: the first
    /// connection's three-way handshake (SYN, SYN-ACK, ACK) is gone, as
    /// when tcpdump starts once the connection is up.
    AfterHandshake,
    /// Only the packets this address sent.
    FromHost(IpAddr),
    /// Every frame, cut to this many bytes as `tcpdump -s N` (or `editcap
    /// -s N`) would have taken it; the wire length stays.
    Snaplen(u32),
}

/// A copy written to disk.
#[derive(Debug, Clone)]
pub struct CaptureCopy {
    /// The copy (classic pcap).
    pub path: PathBuf,
    /// `origin[i]` is the first and last original frame number of the
    /// copy's frame `i + 1` (both 1-based, Wireshark's numbering; the same
    /// number unless frames were coalesced into it).
    pub origin: Vec<(u64, u64)>,
}

impl CaptureCopy {
    /// The original frame numbers (first, last) of the copy's `frame`.
    pub fn original(&self, frame: u64) -> Option<(u64, u64)> {
        let i = usize::try_from(frame.checked_sub(1)?).ok()?;
        self.origin.get(i).copied()
    }

    /// Frames of the copy that stand for several original ones.
    pub fn merged(&self) -> usize {
        self.origin.iter().filter(|(a, b)| b > a).count()
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

fn io_error(what: &str, p: &Path) -> impl FnOnce(std::io::Error) -> LabError {
    let context = format!("{what} {}", p.display());
    move |source| LabError::Io { context, source }
}

fn read(from: &Path) -> Result<Vec<u8>, LabError> {
    std::fs::read(from).map_err(io_error("reading", from))
}

fn parse<'a>(from: &Path, bytes: &'a [u8]) -> Result<PcapCapture<'a>, LabError> {
    PcapCapture::from_file(bytes)
        .map_err(|e| LabError::Analysis(format!("{}: not a classic pcap: {e:?}", from.display())))
}

fn serialize(e: impl std::fmt::Debug) -> LabError {
    LabError::Analysis(format!("writing a pcap record: {e:?}"))
}

/// Write the frames of the classic pcap `from` that `cut` keeps to `to`.
///
/// # Errors
/// [`LabError::Io`] when a file cannot be read or written;
/// [`LabError::Analysis`] when `from` is not a classic pcap.
pub fn copy(from: &Path, to: &Path, cut: Cut) -> Result<CaptureCopy, LabError> {
    let bytes = read(from)?;
    let cap = parse(from, &bytes)?;
    let mut header = cap.header.clone();
    if let Cut::Snaplen(n) = cut {
        header.snaplen = n;
    }
    let mut out = header.to_vec_raw().map_err(serialize)?;
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
            Cut::Snaplen(_) => true,
        };
        if !keep {
            continue;
        }
        if let Cut::Snaplen(n) = cut {
            let data = &rec.data[..rec.data.len().min(n as usize)];
            let short = pcap_parser::LegacyPcapBlock {
                caplen: data.len() as u32,
                data,
                ..*rec
            };
            out.extend(short.to_vec_raw().map_err(serialize)?);
        } else {
            out.extend(rec.to_vec_raw().map_err(serialize)?);
        }
        origin.push((i as u64 + 1, i as u64 + 1));
    }
    std::fs::write(to, out).map_err(io_error("writing", to))?;
    Ok(CaptureCopy {
        path: to.to_path_buf(),
        origin,
    })
}

/// The largest coalesced segment (bytes of TCP payload): an IPv4 packet's
/// 64 KB less headers, as Linux GRO builds them (`GRO_LEGACY_MAX_SIZE`).
const GRO_MAX_PAYLOAD: usize = 64_000;

/// The longest gap between two segments GRO merges (one NAPI poll's worth
/// of packets on a busy receiver).
const GRO_MAX_GAP_US: i64 = 1000;

/// A run of segments being merged.
struct Run {
    /// Index of the output slot the merged packet goes to.
    slot: usize,
    ts: (u32, u32),
    ip: etherparse::Ipv4Header,
    tcp: etherparse::TcpHeader,
    payload: Vec<u8>,
    first: u64,
    last: u64,
    next_seq: u32,
    seg_len: usize,
    last_us: i64,
    ended: bool,
}

impl Run {
    fn flush(self, out: &mut [Option<Vec<u8>>]) -> Result<(u64, u64), LabError> {
        let bad = |e: &dyn std::fmt::Debug| LabError::Analysis(format!("coalescing: {e:?}"));
        let mut ip = self.ip;
        let mut tcp = self.tcp;
        ip.set_payload_len(tcp.header_len() + self.payload.len())
            .map_err(|e| bad(&e))?;
        ip.header_checksum = ip.calc_header_checksum();
        tcp.checksum = tcp
            .calc_checksum_ipv4(&ip, &self.payload)
            .map_err(|e| bad(&e))?;
        let mut data = Vec::with_capacity(ip.header_len() + tcp.header_len() + self.payload.len());
        ip.write(&mut data).map_err(|e| bad(&e))?;
        tcp.write(&mut data).map_err(|e| bad(&e))?;
        data.extend_from_slice(&self.payload);
        let rec = pcap_parser::LegacyPcapBlock {
            ts_sec: self.ts.0,
            ts_usec: self.ts.1,
            caplen: data.len() as u32,
            origlen: data.len() as u32,
            data: &data,
        };
        out[self.slot] = Some(rec.to_vec_raw().map_err(|e| bad(&e))?);
        Ok((self.first, self.last))
    }
}

/// The capture `from` (classic pcap of raw IPv4, as tcpdump writes on the
/// lab's TUN devices) as a host with generic receive offload on would have
/// captured it: runs of in-order, full-sized data segments of one flow, with
/// the same ACK number, flags and TCP options, less than 1 ms apart, become
/// one segment of up to 64 KB (Linux `tcp_gro_receive()`: a segment shorter
/// than the first ends the run). The merged segment takes the first one's
/// place and time; other packets are copied as they are.
///
/// # Errors
/// As [`copy`].
pub fn coalesce(from: &Path, to: &Path) -> Result<CaptureCopy, LabError> {
    use etherparse::{Ipv4HeaderSlice, TcpHeaderSlice};
    use std::collections::HashMap;
    let bytes = read(from)?;
    let cap = parse(from, &bytes)?;
    let nanos = cap.header.is_nanosecond_precision();
    let mut out: Vec<Option<Vec<u8>>> = Vec::new();
    let mut origin: Vec<(u64, u64)> = Vec::new();
    let mut runs: HashMap<(std::net::Ipv4Addr, u16, std::net::Ipv4Addr, u16), Run> = HashMap::new();
    for (i, rec) in cap.blocks.iter().enumerate() {
        let frame = i as u64 + 1;
        let us = i64::from(rec.ts_sec) * 1_000_000
            + i64::from(rec.ts_usec) / if nanos { 1000 } else { 1 };
        let parsed = (cap.header.network == Linktype::RAW || cap.header.network == Linktype::IPV4)
            .then(|| Ipv4HeaderSlice::from_slice(rec.data).ok())
            .flatten()
            .filter(|ip| ip.protocol() == etherparse::IpNumber::TCP && ip.ihl() == 5)
            .filter(|ip| usize::from(ip.total_len()) == rec.data.len())
            .and_then(|ip| {
                let tcp = TcpHeaderSlice::from_slice(&rec.data[ip.slice().len()..]).ok()?;
                Some((ip, tcp))
            });
        let Some((ip, tcp)) = parsed else {
            out.push(Some(rec.to_vec_raw().map_err(serialize)?));
            origin.push((frame, frame));
            continue;
        };
        let payload = &rec.data[ip.slice().len() + tcp.slice().len()..];
        let key = (
            ip.source_addr(),
            tcp.source_port(),
            ip.destination_addr(),
            tcp.destination_port(),
        );
        let data_only = !(payload.is_empty() || tcp.syn() || tcp.rst() || tcp.fin() || tcp.urg());
        if let Some(run) = runs.get_mut(&key) {
            let joins = data_only
                && !run.ended
                && tcp.sequence_number() == run.next_seq
                && tcp.acknowledgment_number() == run.tcp.acknowledgment_number
                && tcp.options() == run.tcp.options.as_slice()
                && payload.len() <= run.seg_len
                && run.payload.len() + payload.len() <= GRO_MAX_PAYLOAD
                && us - run.last_us <= GRO_MAX_GAP_US;
            if joins {
                run.payload.extend_from_slice(payload);
                run.next_seq = run.next_seq.wrapping_add(payload.len() as u32);
                run.last = frame;
                run.last_us = us;
                run.tcp.psh |= tcp.psh();
                run.ended = payload.len() < run.seg_len;
                continue;
            }
            let done = runs.remove(&key).expect("present");
            let slot = done.slot;
            origin[slot] = done.flush(&mut out)?;
        }
        if data_only {
            runs.insert(
                key,
                Run {
                    slot: out.len(),
                    ts: (rec.ts_sec, rec.ts_usec),
                    ip: ip.to_header(),
                    tcp: tcp.to_header(),
                    payload: payload.to_vec(),
                    first: frame,
                    last: frame,
                    next_seq: tcp.sequence_number().wrapping_add(payload.len() as u32),
                    seg_len: payload.len(),
                    last_us: us,
                    ended: false,
                },
            );
            out.push(None);
            origin.push((frame, frame));
        } else {
            out.push(Some(rec.to_vec_raw().map_err(serialize)?));
            origin.push((frame, frame));
        }
    }
    for (_, run) in runs.drain() {
        let slot = run.slot;
        origin[slot] = run.flush(&mut out)?;
    }
    let mut file = cap.header.clone().to_vec_raw().map_err(serialize)?;
    for r in out.into_iter().flatten() {
        file.extend(r);
    }
    std::fs::write(to, file).map_err(io_error("writing", to))?;
    Ok(CaptureCopy {
        path: to.to_path_buf(),
        origin,
    })
}
