//! `struct tcp_info` decoded from the bytes the kernel wrote, by byte
//! offset: no `#[repr(C)]` mirror, so a kernel older than the header (a
//! shorter struct) or newer (a longer one) is handled by the length alone.
//!
//! Layout: `include/uapi/linux/tcp.h` (checked against Linux 6.18 with
//! `offsetof`), filled by kernel `tcp_get_info` (`net/ipv4/tcp.c`). Fields
//! are in host byte order; bitfields are allocated from the least
//! significant bit on little-endian targets and from the most significant
//! on big-endian ones (the C ABI on Linux).

use std::io;
use std::os::fd::AsRawFd;

/// Byte offsets of the fields used, from `include/uapi/linux/tcp.h`.
mod field {
    pub const STATE: usize = 0;
    pub const CA_STATE: usize = 1;
    pub const RETRANSMITS: usize = 2;
    pub const PROBES: usize = 3;
    pub const BACKOFF: usize = 4;
    pub const OPTIONS: usize = 5;
    /// `tcpi_delivery_rate_app_limited:1, tcpi_fastopen_client_fail:2`.
    pub const APP_LIMITED_TFO_FAIL: usize = 7;
    pub const RTO: usize = 8;
    pub const SND_MSS: usize = 16;
    pub const RCV_MSS: usize = 20;
    pub const RTT: usize = 68;
    pub const RTTVAR: usize = 72;
    pub const SND_SSTHRESH: usize = 76;
    pub const SND_CWND: usize = 80;
    pub const RCV_SPACE: usize = 96;
    pub const TOTAL_RETRANS: usize = 100;
    /// End of the original struct (Linux 2.6): everything up to here is
    /// always present.
    pub const ORIGINAL_END: usize = 104;
    pub const PACING_RATE: usize = 104;
    pub const BYTES_ACKED: usize = 120;
    pub const BYTES_RECEIVED: usize = 128;
    pub const SEGS_OUT: usize = 136;
    pub const SEGS_IN: usize = 140;
    pub const MIN_RTT: usize = 148;
    pub const DATA_SEGS_IN: usize = 152;
    pub const DATA_SEGS_OUT: usize = 156;
    pub const DELIVERY_RATE: usize = 160;
    pub const BUSY_TIME: usize = 168;
    pub const RWND_LIMITED: usize = 176;
    pub const SNDBUF_LIMITED: usize = 184;
    pub const DELIVERED: usize = 192;
    pub const BYTES_SENT: usize = 200;
    pub const BYTES_RETRANS: usize = 208;
    pub const SND_WND: usize = 228;
}

/// `TCPI_OPT_TIMESTAMPS`: both SYNs carried the timestamps option (RFC 7323).
pub const TCPI_OPT_TIMESTAMPS: u8 = 0x01;
/// `TCPI_OPT_SACK`: SACK permitted by both ends (RFC 2018).
pub const TCPI_OPT_SACK: u8 = 0x02;
/// `TCPI_OPT_WSCALE`: window scaling in use (RFC 7323 §2).
pub const TCPI_OPT_WSCALE: u8 = 0x04;
/// `TCPI_OPT_ECN`: ECN negotiated (RFC 3168).
pub const TCPI_OPT_ECN: u8 = 0x08;
/// `TCPI_OPT_ECN_SEEN`: at least one ECT packet received.
pub const TCPI_OPT_ECN_SEEN: u8 = 0x10;
/// `TCPI_OPT_SYN_DATA`: the SYN carried data and the SYN-ACK acknowledged
/// it (TCP Fast Open accepted, RFC 7413; set in kernel
/// `tcp_rcv_fastopen_synack`, and on the server for a TFO child).
pub const TCPI_OPT_SYN_DATA: u8 = 0x20;

/// A snapshot of `struct tcp_info` (`include/uapi/linux/tcp.h`; kernel
/// `tcp_get_info`), with the fields the probe reports.
///
/// Units are in the names (`_us` microseconds); rates are bytes per second;
/// counters count since the connection began. Fields the kernel's struct is
/// too short to hold (an older kernel) are `None`; the comment on each says
/// since when Linux has it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TcpInfo {
    /// `tcpi_state`: the socket state, `TCP_ESTABLISHED` = 1 …
    /// `TCP_CLOSING` = 11 (`include/net/tcp_states.h`).
    pub state: u8,
    /// `tcpi_ca_state`: congestion-avoidance state, `TCP_CA_Open` = 0,
    /// `Disorder` 1, `CWR` 2, `Recovery` 3, `Loss` 4.
    pub ca_state: u8,
    /// `tcpi_retransmits`: consecutive retransmission timeouts of the
    /// current segment (`icsk_retransmits`).
    pub retransmits: u8,
    /// `tcpi_probes`: unanswered zero-window or keep-alive probes.
    pub probes: u8,
    /// `tcpi_backoff`: RTO exponential backoff shift.
    pub backoff: u8,
    /// `tcpi_options`: `TCPI_OPT_*` bits ([`TCPI_OPT_SYN_DATA`] …).
    pub options: u8,
    /// `tcpi_rto`: retransmission timeout (µs, RFC 6298).
    pub rto_us: u32,
    /// `tcpi_snd_mss`: current sending MSS (bytes).
    pub snd_mss: u32,
    /// `tcpi_rcv_mss`: estimate of the peer's MSS (bytes).
    pub rcv_mss: u32,
    /// `tcpi_rtt`: smoothed RTT, SRTT (µs, RFC 6298 §2).
    pub rtt_us: u32,
    /// `tcpi_rttvar`: RTT variation (µs, RFC 6298 §2).
    pub rttvar_us: u32,
    /// `tcpi_snd_ssthresh`: slow-start threshold (segments; `0x7fffffff`
    /// = `TCP_INFINITE_SSTHRESH`, still in the first slow start).
    pub snd_ssthresh: u32,
    /// `tcpi_snd_cwnd`: congestion window (segments).
    pub snd_cwnd: u32,
    /// `tcpi_rcv_space`: receive-buffer autotuning's estimate of the
    /// bytes the application reads per RTT (bytes, DRS).
    pub rcv_space: u32,
    /// `tcpi_total_retrans`: segments retransmitted (all causes).
    pub total_retrans: u32,
    /// `tcpi_pacing_rate`: current pacing rate (bytes/s; Linux 3.15+).
    pub pacing_rate: Option<u64>,
    /// `tcpi_bytes_acked`: how far the peer's cumulative ACK advanced
    /// (RFC 4898 tcpEStatsAppHCThruOctetsAcked; 4.1+). Counted in kernel
    /// `tcp_snd_una_update`, so on the side that connected it includes 1
    /// for the SYN (payload bytes acknowledged + 1; the SYN-ACK of a
    /// passive opener is not counted, `tcp_rcv_state_process` moves
    /// `snd_una` past it directly), and 1 for a FIN once acknowledged.
    pub bytes_acked: Option<u64>,
    /// `tcpi_bytes_received`: payload bytes received in order (RFC 4898
    /// tcpEStatsAppHCThruOctetsReceived; 4.1+; kernel `tcp_rcv_nxt_update`,
    /// the SYN not counted).
    pub bytes_received: Option<u64>,
    /// `tcpi_segs_out`: segments sent, retransmissions and pure ACKs
    /// included (RFC 4898 tcpEStatsPerfSegsOut; 4.2+).
    pub segs_out: Option<u32>,
    /// `tcpi_segs_in`: segments received (RFC 4898 tcpEStatsPerfSegsIn; 4.2+).
    pub segs_in: Option<u32>,
    /// `tcpi_min_rtt`: windowed minimum RTT (µs; 4.6+).
    pub min_rtt_us: Option<u32>,
    /// `tcpi_data_segs_in`: segments received with payload (RFC 4898
    /// tcpEStatsDataSegsIn; 4.6+).
    pub data_segs_in: Option<u32>,
    /// `tcpi_data_segs_out`: segments sent with payload (RFC 4898
    /// tcpEStatsDataSegsOut; 4.6+).
    pub data_segs_out: Option<u32>,
    /// `tcpi_delivery_rate`: most recent delivery-rate sample (bytes/s;
    /// 4.9+, kernel `tcp_rate_gen`).
    pub delivery_rate: Option<u64>,
    /// `tcpi_busy_time`: time with data in flight (µs; 4.10+,
    /// `TCP_CHRONO_BUSY`).
    pub busy_time_us: Option<u64>,
    /// `tcpi_rwnd_limited`: time stalled by the peer's receive window (µs;
    /// 4.10+, `TCP_CHRONO_RWND_LIMITED`).
    pub rwnd_limited_us: Option<u64>,
    /// `tcpi_sndbuf_limited`: time stalled by the send buffer (µs; 4.10+,
    /// `TCP_CHRONO_SNDBUF_LIMITED`).
    pub sndbuf_limited_us: Option<u64>,
    /// `tcpi_delivered`: segments delivered, retransmissions included
    /// (4.18+).
    pub delivered: Option<u32>,
    /// `tcpi_bytes_sent`: payload bytes sent, retransmissions included
    /// (RFC 4898 tcpEStatsPerfHCDataOctetsOut; 4.19+).
    pub bytes_sent: Option<u64>,
    /// `tcpi_bytes_retrans`: payload bytes retransmitted (RFC 4898
    /// tcpEStatsPerfOctetsRetrans; 4.19+).
    pub bytes_retrans: Option<u64>,
    /// `tcpi_snd_wnd`: the peer's advertised receive window, scaled (bytes;
    /// 5.4+).
    pub snd_wnd: Option<u32>,
    /// `tcpi_fastopen_client_fail` (2 bits; 5.5+): why client TFO failed,
    /// `0` unspecified, `1` no cookie sent, `2` the SYN-ACK did not
    /// acknowledge the SYN data, `3` the SYN-ACK carried no cookie (kernel
    /// `enum tfo_client_fail`). `Some` whenever the struct reaches
    /// `tcpi_snd_wnd` (5.4+); a 5.4 kernel leaves the bits at 0.
    pub fastopen_client_fail: Option<u8>,
}

/// A native-endian `u32` at `off`, if the buffer holds all of it.
fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let bytes = b.get(off..off.checked_add(4)?)?;
    Some(u32::from_ne_bytes(bytes.try_into().ok()?))
}

/// A native-endian `u64` at `off`, if the buffer holds all of it.
fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    let bytes = b.get(off..off.checked_add(8)?)?;
    Some(u64::from_ne_bytes(bytes.try_into().ok()?))
}

/// `tcpi_fastopen_client_fail`: bits 1–2 of byte 7 on little-endian
/// targets, bits 6–5 on big-endian ones (C bitfield allocation order).
fn fastopen_client_fail(byte: u8) -> u8 {
    if cfg!(target_endian = "little") {
        (byte >> 1) & 0b11
    } else {
        (byte >> 5) & 0b11
    }
}

impl TcpInfo {
    /// Decode the bytes the kernel wrote (`b` = the buffer cut to the
    /// length `getsockopt` returned). Fields past the end of `b` are
    /// `None`. Never panics.
    ///
    /// Returns `None` when `b` is shorter than the original struct (104
    /// bytes, up to `tcpi_total_retrans`), which every Linux since 2.6
    /// fills.
    pub fn from_bytes(b: &[u8]) -> Option<TcpInfo> {
        use field::*;
        if b.len() < ORIGINAL_END {
            return None;
        }
        let byte = |off: usize| b.get(off).copied();
        Some(TcpInfo {
            state: byte(STATE)?,
            ca_state: byte(CA_STATE)?,
            retransmits: byte(RETRANSMITS)?,
            probes: byte(PROBES)?,
            backoff: byte(BACKOFF)?,
            options: byte(OPTIONS)?,
            rto_us: u32_at(b, RTO)?,
            snd_mss: u32_at(b, SND_MSS)?,
            rcv_mss: u32_at(b, RCV_MSS)?,
            rtt_us: u32_at(b, RTT)?,
            rttvar_us: u32_at(b, RTTVAR)?,
            snd_ssthresh: u32_at(b, SND_SSTHRESH)?,
            snd_cwnd: u32_at(b, SND_CWND)?,
            rcv_space: u32_at(b, RCV_SPACE)?,
            total_retrans: u32_at(b, TOTAL_RETRANS)?,
            pacing_rate: u64_at(b, PACING_RATE),
            bytes_acked: u64_at(b, BYTES_ACKED),
            bytes_received: u64_at(b, BYTES_RECEIVED),
            segs_out: u32_at(b, SEGS_OUT),
            segs_in: u32_at(b, SEGS_IN),
            min_rtt_us: u32_at(b, MIN_RTT),
            data_segs_in: u32_at(b, DATA_SEGS_IN),
            data_segs_out: u32_at(b, DATA_SEGS_OUT),
            delivery_rate: u64_at(b, DELIVERY_RATE),
            busy_time_us: u64_at(b, BUSY_TIME),
            rwnd_limited_us: u64_at(b, RWND_LIMITED),
            sndbuf_limited_us: u64_at(b, SNDBUF_LIMITED),
            delivered: u32_at(b, DELIVERED),
            bytes_sent: u64_at(b, BYTES_SENT),
            bytes_retrans: u64_at(b, BYTES_RETRANS),
            snd_wnd: u32_at(b, SND_WND),
            fastopen_client_fail: u32_at(b, SND_WND)
                .and(byte(APP_LIMITED_TFO_FAIL))
                .map(fastopen_client_fail),
        })
    }

    /// [`TCPI_OPT_SYN_DATA`] (0x20): the SYN carried data and the SYN-ACK
    /// acknowledged it (TFO accepted, RFC 7413).
    pub fn syn_data_acked(&self) -> bool {
        self.options & TCPI_OPT_SYN_DATA != 0
    }

    /// [`TCPI_OPT_TIMESTAMPS`]: timestamps negotiated (RFC 7323 §3).
    pub fn has_timestamps(&self) -> bool {
        self.options & TCPI_OPT_TIMESTAMPS != 0
    }

    /// [`TCPI_OPT_SACK`]: SACK permitted by both ends (RFC 2018).
    pub fn has_sack(&self) -> bool {
        self.options & TCPI_OPT_SACK != 0
    }

    /// [`TCPI_OPT_WSCALE`]: window scaling negotiated (RFC 7323 §2).
    pub fn has_wscale(&self) -> bool {
        self.options & TCPI_OPT_WSCALE != 0
    }
}

/// Room for `struct tcp_info` of kernels newer than this code (232 bytes
/// in the Linux 6.x uapi header): the kernel writes `min(len, sizeof)`, so
/// a larger buffer costs nothing and a shorter struct leaves fields `None`.
const BUF_LEN: usize = 512;

/// `getsockopt(TCP_INFO)` into a zeroed buffer, decoded with
/// [`TcpInfo::from_bytes`] (the only unsafe code is the system call).
///
/// # Errors
/// The `errno` of `getsockopt(2)` (`EBADF`, `ENOTSOCK`, `EOPNOTSUPP` for a
/// non-TCP socket); `InvalidData` if the kernel wrote fewer than the 104
/// bytes of the original struct.
pub fn tcp_info(sock: &impl AsRawFd) -> io::Result<TcpInfo> {
    let mut buf = [0u8; BUF_LEN];
    let len = crate::ffi::getsockopt_tcp_info(sock, &mut buf)?;
    TcpInfo::from_bytes(buf.get(..len).unwrap_or(&[])).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the kernel wrote {len} bytes of struct tcp_info, fewer than 104"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 232-byte struct (Linux 5.4+ layout) with a distinct value in
    /// every decoded field, written at the uapi offsets.
    fn full() -> Vec<u8> {
        let mut b = vec![0u8; 232];
        b[..6].copy_from_slice(&[1, 3, 2, 1, 4, 0x27]);
        // snd_wscale 7, rcv_wscale 9 (LE: low nibble first)
        b[6] = if cfg!(target_endian = "little") {
            0x97
        } else {
            0x79
        };
        // app_limited 1, fastopen_client_fail 2
        b[7] = if cfg!(target_endian = "little") {
            0b101
        } else {
            0b1100_0000
        };
        let put32 = |b: &mut Vec<u8>, off: usize, v: u32| {
            b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        };
        for (off, v) in [
            (8, 204_000),
            (16, 1448),
            (20, 536),
            (68, 20_123),
            (72, 5_004),
            (76, 0x7fff_ffff),
            (80, 10),
            (96, 14_480),
            (100, 2),
            (136, 11),
            (140, 12),
            (148, 20_000),
            (152, 5),
            (156, 6),
            (192, 7),
            (228, 65_535),
        ] {
            put32(&mut b, off, v);
        }
        for (off, v) in [
            (104u64, 1_000_000u64),
            (120, 4_096),
            (128, 8_192),
            (160, 2_000_000),
            (168, 300),
            (176, 400),
            (184, 500),
            (200, 5_000),
            (208, 904),
        ] {
            let off = off as usize;
            b[off..off + 8].copy_from_slice(&v.to_ne_bytes());
        }
        b
    }

    #[test]
    fn test_deconstruct() {
        let i = TcpInfo::from_bytes(&full()).unwrap();
        assert_eq!(
            i,
            TcpInfo {
                state: 1,
                ca_state: 3,
                retransmits: 2,
                probes: 1,
                backoff: 4,
                options: 0x27,
                rto_us: 204_000,
                snd_mss: 1448,
                rcv_mss: 536,
                rtt_us: 20_123,
                rttvar_us: 5_004,
                snd_ssthresh: 0x7fff_ffff,
                snd_cwnd: 10,
                rcv_space: 14_480,
                total_retrans: 2,
                pacing_rate: Some(1_000_000),
                bytes_acked: Some(4_096),
                bytes_received: Some(8_192),
                segs_out: Some(11),
                segs_in: Some(12),
                min_rtt_us: Some(20_000),
                data_segs_in: Some(5),
                data_segs_out: Some(6),
                delivery_rate: Some(2_000_000),
                busy_time_us: Some(300),
                rwnd_limited_us: Some(400),
                sndbuf_limited_us: Some(500),
                delivered: Some(7),
                bytes_sent: Some(5_000),
                bytes_retrans: Some(904),
                snd_wnd: Some(65_535),
                fastopen_client_fail: Some(2),
            }
        );
        assert!(i.syn_data_acked() && i.has_timestamps() && i.has_sack() && i.has_wscale());
        // A longer struct from a newer kernel decodes the same.
        let mut longer = full();
        longer.resize(300, 0xff);
        assert_eq!(TcpInfo::from_bytes(&longer), Some(i));
    }

    #[test]
    fn test_truncated() {
        let b = full();
        assert_eq!(TcpInfo::from_bytes(&[]), None);
        assert_eq!(TcpInfo::from_bytes(&b[..103]), None);
        // The original struct: only the fixed fields.
        let i = TcpInfo::from_bytes(&b[..104]).unwrap();
        assert_eq!(i.total_retrans, 2);
        assert_eq!(i.pacing_rate, None);
        assert_eq!(i.snd_wnd, None);
        assert_eq!(i.fastopen_client_fail, None);
        // A field cut in its middle is None, the one before it is Some.
        let i = TcpInfo::from_bytes(&b[..150]).unwrap();
        assert_eq!(i.segs_in, Some(12));
        assert_eq!(i.min_rtt_us, None);
        assert_eq!(i.delivery_rate, None);
        // 4.19 (ends after tcpi_reord_seen at 224): no snd_wnd, no TFO bits.
        let i = TcpInfo::from_bytes(&b[..224]).unwrap();
        assert_eq!(i.bytes_retrans, Some(904));
        assert_eq!(i.snd_wnd, None);
        assert_eq!(i.fastopen_client_fail, None);
        // Every length decodes without panicking, and more bytes never
        // turn a Some into a None.
        let mut known = 0;
        for len in 0..=b.len() {
            if let Some(i) = TcpInfo::from_bytes(&b[..len]) {
                let s = serde_json::to_string(&i).unwrap();
                let n = s.matches("null").count();
                assert!(len == 104 || n <= known, "len {len}");
                known = n;
            }
        }
        assert_eq!(known, 0);
    }

    #[test]
    fn test_options() {
        let mut i = TcpInfo::default();
        assert!(!i.syn_data_acked() && !i.has_timestamps() && !i.has_sack() && !i.has_wscale());
        i.options = TCPI_OPT_SYN_DATA;
        assert!(i.syn_data_acked() && !i.has_sack());
    }
}
