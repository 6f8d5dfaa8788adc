//! What the pipeline does with each frame before flow tracking (counts,
//! decoding, the filter, duplicates, QUIC, when the flow tables are swept),
//! on one thread whether the tracking is on the same thread or sharded.

use super::CaptureSummary;
use crate::analysis;
use crate::base::side::FrameRef;
use crate::base::time::Timestamp;
use crate::capture::keylog::KeyStore;
use crate::capture::{CaptureError, Frame, FrameSource, Next, SharedFrame};
use crate::detect;
use crate::filter::Filter;
use crate::flow::shard::Shard;
use crate::flow::{SWEEP_EVERY, SWEEP_INTERVAL, SWEEP_MIN};
use crate::model::QuicReport;
use crate::quic::conn::QuicConn;
use crate::quic::table::QuicTable;
use crate::wire::community_id::UDP;
use crate::wire::duplicates::Duplicates;
use crate::wire::{self, Decoded, TcpSegment, UdpDatagram};

/// How often the QUIC connections are swept for idle ones (capture time).
const QUIC_SWEEP_INTERVAL: crate::base::time::Duration =
    crate::base::time::Duration::from_millis(1_000);

/// What the pipeline does with each frame before flow tracking, on one
/// thread whether the tracking is on the same thread or sharded: counts,
/// decoding, the filter, and when the flow tables are swept.
pub(super) struct Intake<'f> {
    pub(super) sum: CaptureSummary,
    pub(super) filter: Option<&'f Filter>,
    pub(super) first: Option<Timestamp>,
    pub(super) last: Timestamp,
    /// Latest timestamp of a TCP segment tracked or filtered out
    /// ([`FlowTable::sweep`]'s now).
    pub(super) now: Timestamp,
    pub(super) tracked: u64,
    /// TCP segments tracked or filtered out: the clock of the sweeps, so
    /// that a filter that drops most segments does not leave connections
    /// that are over waiting in memory (without a filter: `tracked`).
    pub(super) clock: u64,
    /// Tracked segments and `now` at the last sweep.
    pub(super) swept: (u64, Timestamp),
    /// The last segments, to drop exact copies of them.
    pub(super) copies: Duplicates,
    /// The frames dropped as copies, when [`frame_marks`] asks for them.
    pub(super) copy_frames: Option<Vec<u64>>,
    /// The source is a live capture ([`FrameSource::is_live`]): sweeps
    /// run on time alone, so a connection is handed on about
    /// `CLOSED_LINGER` after it closed however few segments follow.
    pub(super) live: bool,
    /// QUIC connections (read on this thread: they are few, and the
    /// parallel pipeline's reader sees every datagram).
    pub(super) quic: QuicTable,
    /// When the QUIC table was last swept.
    pub(super) quic_swept: Timestamp,
    /// QUIC connections that ended and were analysed, not yet handed on.
    pub(super) quic_ended: Vec<QuicReport>,
    /// The Community ID seed of the QUIC records.
    pub(super) seed: u16,
    /// `--shard`: only its QUIC connections are analysed.
    pub(super) shard: Option<Shard>,
}

impl<'f> Intake<'f> {
    pub(super) fn new(filter: Option<&'f Filter>) -> Intake<'f> {
        Intake {
            sum: CaptureSummary {
                filter: filter.map(|f| f.text().to_string()),
                ..CaptureSummary::default()
            },
            filter,
            first: None,
            last: Timestamp::default(),
            now: Timestamp::default(),
            tracked: 0,
            clock: 0,
            swept: (0, Timestamp::default()),
            copies: Duplicates::default(),
            copy_frames: None,
            live: false,
            quic: QuicTable::default(),
            quic_swept: Timestamp::default(),
            quic_ended: Vec::new(),
            seed: 0,
            shard: None,
        }
    }

    /// Gives the QUIC records' Community IDs `seed`; only `shard`'s QUIC
    /// connections are analysed.
    pub(super) fn with_seed(mut self, seed: u16, shard: Option<Shard>) -> Self {
        self.seed = seed;
        self.shard = shard;
        self
    }

    /// Reads QUIC with the secrets of `keys`, each connection keeping its
    /// datagrams when `trace` is set, its packets and frames when `journal`
    /// is.
    pub(super) fn with_keys(mut self, keys: KeyStore, trace: bool, journal: bool) -> Self {
        self.quic = QuicTable::new(keys).with_trace(trace).with_journal(journal);
        self
    }

    /// A QUIC connection that ended: analysed, its report (Community ID
    /// with `seed`) kept until the caller hands it on
    /// ([`Intake::quic_ended`]); dropped unanalysed when its first 4-tuple
    /// is not in `shard`. Another shard's QUIC connections are tracked
    /// whole until then: their datagrams are placed by connection IDs,
    /// which only decryption follows.
    pub(super) fn quic_done(
        ended: &mut Vec<QuicReport>,
        (start, seed, shard): (Timestamp, u16, Option<Shard>),
        c: QuicConn,
    ) {
        if shard.is_some_and(|s| !s.contains(seed, UDP, c.client, c.server)) {
            return;
        }
        let mut a = analysis::quic::analyze(c);
        let findings = detect::run_quic(&a);
        let trace = a.take_trace();
        let journal = a.take_journal();
        let mut report = QuicReport::new(&a, findings, start, seed);
        report.journal = journal;
        report.trace = trace.map(|mut t| {
            t.labels = crate::model::quic_frame_labels(&a);
            t
        });
        ended.push(report);
    }

    /// Reads a UDP datagram; whether it was QUIC.
    pub(super) fn take_udp(&mut self, d: &UdpDatagram<'_>, at: FrameRef) -> bool {
        if self.filter.is_some_and(|f| !f.matches_udp(d)) {
            return false;
        }
        // sweep first: a connection idle past the timeout is over before
        // this datagram, which then opens a connection of its own even on
        // the same connection IDs (RFC 9000 §10.1: an idle connection is
        // discarded)
        self.sweep_quic(at.ts);
        let at_seed = (self.start(), self.seed, self.shard);
        let ended = &mut self.quic_ended;
        self.quic
            .push(d, at, &mut |c| Intake::quic_done(ended, at_seed, c))
    }

    /// Sweeps the QUIC table at `now` when [`QUIC_SWEEP_INTERVAL`] has
    /// passed since the last sweep.
    pub(super) fn sweep_quic(&mut self, now: Timestamp) {
        if now - self.quic_swept >= QUIC_SWEEP_INTERVAL {
            self.quic_swept = now;
            let at_seed = (self.start(), self.seed, self.shard);
            let ended = &mut self.quic_ended;
            self.quic
                .sweep(now, &mut |c| Intake::quic_done(ended, at_seed, c));
        }
    }

    /// Counts `frame`; the TCP segment to track, if any.
    pub(super) fn take<'a>(&mut self, frame: &Frame<'a>) -> Option<(TcpSegment<'a>, FrameRef)> {
        self.sum.frames += 1;
        self.first.get_or_insert(frame.ts);
        self.last = self.last.max(frame.ts);
        // live: QUIC connections are handed on as time passes, whatever
        // the packets (a file's are swept on its UDP datagrams' time)
        if self.live {
            self.sweep_quic(frame.ts);
        }
        match wire::decode(frame.link_type, frame.data, frame.orig_len) {
            Ok(Decoded::Tcp(seg)) => {
                self.sum.tcp_segments += 1;
                if self.filter.is_some_and(|f| !f.matches(&seg)) {
                    self.sum.filtered_out += 1;
                    self.clock += 1;
                    self.now = self.now.max(frame.ts);
                    return None;
                }
                if self.copies.is_copy(&seg, frame.ts) {
                    self.sum.quality.duplicate_frames += 1;
                    if let Some(v) = &mut self.copy_frames {
                        v.push(frame.number);
                    }
                    return None;
                }
                if seg.is_cut() {
                    self.sum.quality.snaplen_cut += 1;
                }
                if seg.options.malformed {
                    self.sum.quality.malformed_tcp_options += 1;
                }
                self.tracked += 1;
                self.clock += 1;
                self.now = self.now.max(frame.ts);
                let at = FrameRef {
                    frame: frame.number,
                    ts: frame.ts,
                };
                Some((seg, at))
            }
            Ok(Decoded::Udp(d)) => {
                let at = FrameRef {
                    frame: frame.number,
                    ts: frame.ts,
                };
                if self.take_udp(&d, at) {
                    self.sum.quic_datagrams += 1;
                } else {
                    self.sum.other_packets += 1;
                }
                None
            }
            Ok(_) => {
                self.sum.other_packets += 1;
                None
            }
            Err(e) => {
                *self
                    .sum
                    .quality
                    .decode_errors
                    .entry(e.to_string())
                    .or_default() += 1;
                None
            }
        }
    }

    /// Whether the flow tables are swept after the frame just taken
    /// ([`SWEEP_EVERY`], [`SWEEP_MIN`] TCP segments, tracked or filtered
    /// out).
    pub(super) fn sweep_due(&mut self) -> bool {
        let since = self.clock - self.swept.0;
        let due = since >= SWEEP_EVERY
            || (since >= SWEEP_MIN || self.live && since > 0)
                && self.now - self.swept.1 >= SWEEP_INTERVAL;
        if due {
            self.swept = (self.clock, self.now);
        }
        due
    }

    /// The capture's first timestamp (connections' times are relative to it).
    pub(super) fn start(&self) -> Timestamp {
        self.first.unwrap_or_default()
    }

    /// Reads the next frame, or a live source's idle time
    /// ([`FrameSource::next_or_idle`]); a break after the first frame is
    /// noted and ends the reading. `Ok(None)` at the end.
    pub(super) fn next_or_idle<'r>(
        &mut self,
        reader: &'r mut dyn FrameSource,
    ) -> Result<Option<Next<'r>>, CaptureError> {
        self.judge(reader.next_or_idle())
    }

    /// A live source had no packet until `now` (its capture clock): the
    /// clock of the sweeps moves on to it and the QUIC table is swept; the
    /// caller sweeps the flow tables at [`Intake::now`] (every idle time
    /// is a sweep point) and hands on [`Intake::quic_ended`]. Nothing
    /// before the first frame (there is no connection yet), and the clock
    /// never goes back. Whether the flow tables are to be swept (not
    /// before the first frame).
    pub(super) fn idle(&mut self, now: Timestamp) -> bool {
        if self.first.is_none() {
            return false;
        }
        self.now = self.now.max(now);
        self.swept = (self.clock, self.now);
        self.sweep_quic(self.now);
        true
    }

    /// The next frame, with its bytes shared when the source can (as
    /// [`next_or_idle`](Self::next_or_idle) but for a file's frames).
    #[allow(clippy::type_complexity)]
    pub(super) fn next_shared<'r>(
        &mut self,
        reader: &'r mut dyn FrameSource,
    ) -> Result<Option<(Frame<'r>, Option<SharedFrame<'r>>)>, CaptureError> {
        self.judge(reader.next_shared())
    }

    /// A read's result: a break after the first frame is noted and ends
    /// the reading.
    pub(super) fn judge<T>(
        &mut self,
        read: Result<Option<T>, CaptureError>,
    ) -> Result<Option<T>, CaptureError> {
        match read {
            Ok(f) => Ok(f),
            Err(e) if self.sum.frames == 0 => Err(e),
            Err(e) => {
                self.sum.quality.truncated = Some(e.to_string());
                Ok(None)
            }
        }
    }

    /// The summary once the reading is over (the flow tables' own counts
    /// and `findings_by_id` are the caller's to fill), and the QUIC
    /// connections still open then, in index order, analysed.
    pub(super) fn finish(mut self, reader: &dyn FrameSource) -> (CaptureSummary, Vec<QuicReport>) {
        let start = self.start();
        let quic = std::mem::take(&mut self.quic);
        let mut left = std::mem::take(&mut self.quic_ended);
        let from = left.len();
        let at_seed = (start, self.seed, self.shard);
        quic.finish(&mut |c| Intake::quic_done(&mut left, at_seed, c));
        left[from..].sort_by_key(|q| q.index);
        let sum = &mut self.sum;
        let breaks = reader.breaks();
        if !breaks.is_empty() {
            let mut all: Vec<String> = sum.quality.truncated.take().into_iter().collect();
            all.extend(breaks);
            sum.quality.truncated = Some(all.join("; "));
        }
        sum.format = reader.format_name();
        sum.quality.kernel_drops = reader.kernel_drops();
        sum.bytes = reader.bytes_read();
        sum.first_ts = start.as_secs_f64();
        sum.duration_s = (self.last - start).as_secs_f64();
        let n = reader.notes();
        let notes = [
            // frames cut by snaplen: counted per TCP segment (`snaplen_cut`)
            (
                "records with caplen above the wire length",
                n.caplen_above_orig_len,
            ),
            ("packets without timestamp (SPB)", n.missing_timestamp),
            ("packets on an undescribed interface", n.unknown_interface),
            ("malformed pcapng blocks", n.malformed_blocks),
            (
                "interfaces with an unusable timestamp resolution",
                n.bad_ts_resolution,
            ),
            ("timestamps going backwards", n.ts_backwards),
        ];
        for (k, v) in notes {
            if v > 0 {
                sum.quality.reader_notes.insert(k.to_string(), v);
            }
        }
        (self.sum, left)
    }
}
