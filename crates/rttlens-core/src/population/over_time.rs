//! The capture cut into intervals of time: per interval, new connections,
//! handshakes in progress, each phase's percentiles, the RTT, and the signs
//! of loss and of a full backlog. Streaming: the intervals are kept as at
//! most [`MAX_CELLS`] cells whose width grows (merging neighbours, their
//! histograms added) as the capture runs longer, so memory is bounded
//! whatever its length; at the end the cells are merged into the reported
//! intervals.

use super::hist::Dist;
use super::sample::{PhaseId, Sample};

/// Cells kept while reading (automatic width).
const MAX_CELLS: usize = 64;
/// Intervals reported with the automatic width: at most this many.
pub(crate) const AUTO_INTERVALS: usize = 60;
/// Intervals kept with a width the user chose (`--interval`): past this
/// the width is doubled, and the report says so.
pub(crate) const MAX_FIXED: usize = 2000;

/// Widths the automatic intervals take (ms): each a whole multiple of the
/// one before, so cells merge exactly; then doubling.
const LADDER_MS: [u64; 16] = [
    1, 2, 10, 20, 100, 200, 1000, 2000, 10_000, 20_000, 60_000, 300_000, 600_000, 1_800_000,
    3_600_000, 7_200_000,
];

/// Phases with a distribution per interval.
pub(crate) const CELL_PHASES: [PhaseId; 5] = [
    PhaseId::Connect,
    PhaseId::Tls,
    PhaseId::ServerHandshake,
    PhaseId::Ttfb,
    PhaseId::QuicHandshake,
];

/// One interval while reading.
#[derive(Debug, Clone)]
pub(crate) struct Cell {
    pub(crate) new_connections: u64,
    /// Handshake time inside the interval, summed over connections (ms):
    /// over the width, the mean number of handshakes in progress.
    pub(crate) handshake_ms: f64,
    pub(crate) phases: [Dist; CELL_PHASES.len()],
    /// Connections' baseline RTTs (ms).
    pub(crate) rtt: Dist,
    pub(crate) data_segments: u64,
    pub(crate) retransmissions: u64,
    /// The server's data segments, its retransmissions, and connections
    /// where it retransmitted: loss on the path to the client, which a
    /// full backlog at the server (dropping the client's packets) does
    /// not cause.
    pub(crate) server_data: u64,
    pub(crate) server_retx: u64,
    pub(crate) server_conns_with_retx: u64,
    /// Connections whose SYN is in the capture, and whose SYN was sent
    /// more than once.
    pub(crate) syns: u64,
    pub(crate) syn_retransmitted: u64,
    /// SYN-ACKs resent after the client's ACK (the ACK was not taken).
    pub(crate) ack_ignored: u64,
    /// SYN-ACKs without the window scale and SACK their SYN offered.
    pub(crate) options_dropped: u64,
    /// Time the connections of the interval lost to an RTT above the
    /// capture's baseline: Σ first-byte ms × (1 − baseline/RTT), with the
    /// baseline known only at the end, kept as Σ first-byte ms and
    /// Σ first-byte ms / RTT.
    pub(crate) first_byte_ms: f64,
    pub(crate) first_byte_per_rtt: f64,
}

impl Cell {
    fn new() -> Cell {
        Cell {
            new_connections: 0,
            handshake_ms: 0.0,
            phases: std::array::from_fn(|_| Dist::new(2)),
            rtt: Dist::new(2),
            data_segments: 0,
            retransmissions: 0,
            server_data: 0,
            server_retx: 0,
            server_conns_with_retx: 0,
            syns: 0,
            syn_retransmitted: 0,
            ack_ignored: 0,
            options_dropped: 0,
            first_byte_ms: 0.0,
            first_byte_per_rtt: 0.0,
        }
    }

    fn merge(&mut self, o: &Cell) {
        self.new_connections += o.new_connections;
        self.handshake_ms += o.handshake_ms;
        for (a, b) in self.phases.iter_mut().zip(&o.phases) {
            a.merge(b);
        }
        self.rtt.merge(&o.rtt);
        self.data_segments += o.data_segments;
        self.retransmissions += o.retransmissions;
        self.server_data += o.server_data;
        self.server_retx += o.server_retx;
        self.server_conns_with_retx += o.server_conns_with_retx;
        self.syns += o.syns;
        self.syn_retransmitted += o.syn_retransmitted;
        self.ack_ignored += o.ack_ignored;
        self.options_dropped += o.options_dropped;
        self.first_byte_ms += o.first_byte_ms;
        self.first_byte_per_rtt += o.first_byte_per_rtt;
    }

    /// Connections' data-segment retransmission share.
    pub(crate) fn retx_rate(&self) -> f64 {
        ratio(self.retransmissions, self.data_segments)
    }

    /// The server's data-segment retransmission share.
    pub(crate) fn server_retx_rate(&self) -> f64 {
        ratio(self.server_retx, self.server_data)
    }
}

/// `n / of`, 0 when `of` is 0.
pub(crate) fn ratio(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64
    }
}

/// The intervals while reading.
#[derive(Debug, Clone)]
pub(crate) struct Cells {
    /// Cell width (ms).
    width_ms: u64,
    /// The width was given (`--interval`).
    fixed: bool,
    /// The given width had to be widened to keep at most [`MAX_FIXED`].
    pub(crate) widened: bool,
    cells: Vec<Cell>,
}

impl Cells {
    /// `interval_ms`: the width asked for, or `None` for automatic.
    pub(crate) fn new(interval_ms: Option<u64>) -> Cells {
        Cells {
            width_ms: interval_ms.unwrap_or(LADDER_MS[0]).max(1),
            fixed: interval_ms.is_some(),
            widened: false,
            cells: Vec::new(),
        }
    }

    /// Cell index of time `t_s` (s), the cells grown (and widened) so it
    /// exists.
    fn cell_at(&mut self, t_s: f64) -> usize {
        let ms = (t_s.max(0.0) * 1000.0) as u64;
        let max = if self.fixed { MAX_FIXED } else { MAX_CELLS };
        while ms / self.width_ms >= max as u64 {
            self.widen();
        }
        let i = (ms / self.width_ms) as usize;
        if self.cells.len() <= i {
            self.cells.resize_with(i + 1, Cell::new);
        }
        i
    }

    /// The next width: the ladder's next step (automatic) or twice the
    /// width (given), the cells merged to it.
    fn widen(&mut self) {
        let next = if self.fixed {
            self.widened = true;
            self.width_ms * 2
        } else {
            LADDER_MS
                .iter()
                .copied()
                .find(|&w| w > self.width_ms)
                .unwrap_or(self.width_ms * 2)
        };
        let k = (next / self.width_ms) as usize;
        self.cells = merge_cells(std::mem::take(&mut self.cells), k);
        self.width_ms = next;
    }

    /// Fold in one connection.
    pub(crate) fn add(&mut self, s: &Sample) {
        // the handshake's end first: widening moves every cell
        let last = self.cell_at(s.handshake_end_s);
        let i = self.cell_at(s.start_s);
        let last = last.max(i);
        let w = self.width_ms as f64;
        let (from, to) = (s.start_s * 1000.0, s.handshake_end_s * 1000.0);
        for j in i..=last {
            let (a, b) = (j as f64 * w, (j + 1) as f64 * w);
            let overlap = to.min(b) - from.max(a);
            if overlap > 0.0 {
                self.cells[j].handshake_ms += overlap;
            }
        }
        let c = &mut self.cells[i];
        c.new_connections += 1;
        for (d, p) in c.phases.iter_mut().zip(CELL_PHASES) {
            if let Some(ms) = s.ms(p) {
                d.record(ms);
            }
        }
        if let Some(r) = s.rtt_ms {
            c.rtt.record(r);
            if let Some(fb) = s.first_byte_ms {
                c.first_byte_ms += fb;
                c.first_byte_per_rtt += fb / r;
            }
        }
        c.data_segments += s.data_segments[0] + s.data_segments[1];
        c.retransmissions += s.retransmissions[0] + s.retransmissions[1];
        c.server_data += s.data_segments[1];
        c.server_retx += s.retransmissions[1];
        c.server_conns_with_retx += u64::from(s.retransmissions[1] > 0);
        if let Some(syn) = &s.syn {
            c.syns += 1;
            c.syn_retransmitted += u64::from(syn.syn_count > 1);
            c.ack_ignored += u64::from(syn.ack_ignored.is_some());
            c.options_dropped += u64::from(
                syn.shape
                    .is_some_and(|sh| sh.offered_without_ts && !sh.granted),
            );
        }
    }

    /// The reported intervals: the cells merged to at most
    /// [`AUTO_INTERVALS`] (automatic width) or as given; with their width
    /// (ms).
    pub(crate) fn finish(self) -> (u64, Vec<Cell>) {
        let mut width = self.width_ms;
        let mut cells = self.cells;
        if !self.fixed {
            let span = cells.len() as u64 * width;
            let target = LADDER_MS
                .iter()
                .copied()
                .find(|&w| w >= width && span.div_ceil(w) <= AUTO_INTERVALS as u64)
                .unwrap_or(width);
            if target > width {
                cells = merge_cells(cells, (target / width) as usize);
                width = target;
            }
        }
        (width, cells)
    }
}

/// `cells` merged `k` by `k`.
fn merge_cells(cells: Vec<Cell>, k: usize) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::with_capacity(cells.len().div_ceil(k.max(1)));
    for (j, c) in cells.into_iter().enumerate() {
        if j % k.max(1) == 0 {
            out.push(c);
        } else if let Some(last) = out.last_mut() {
            last.merge(&c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(start_s: f64, hs_s: f64) -> Sample {
        let mut s = Sample {
            start_s,
            handshake_end_s: start_s + hs_s,
            ..Sample::default()
        };
        s.phases[PhaseId::Connect.index()] = Some((hs_s * 1000.0, None));
        s
    }

    #[test]
    fn cells_widen_on_the_ladder_and_keep_every_connection() {
        let mut c = Cells::new(None);
        for i in 0..1000 {
            c.add(&sample(f64::from(i) * 0.01, 0.005)); // 10 s, 100/s
        }
        assert!(c.cells.len() <= MAX_CELLS);
        let (w, cells) = c.finish();
        // 10 s in at most 60 intervals: 200 ms (50 of them)
        assert_eq!(w, 200);
        assert_eq!(cells.len(), 50);
        assert_eq!(cells.iter().map(|c| c.new_connections).sum::<u64>(), 1000);
        // 20 handshakes of 5 ms in each 200 ms: 0.5 in progress on average
        for c in &cells {
            assert!((c.handshake_ms / w as f64 - 0.5).abs() < 1e-6);
            assert_eq!(c.phases[0].count(), 20);
        }
    }

    #[test]
    fn a_given_width_is_kept_and_widened_past_the_cap() {
        let mut c = Cells::new(Some(250));
        c.add(&sample(0.1, 0.3)); // handshake over two cells
        c.add(&sample(1.9, 0.01));
        let (w, cells) = c.finish();
        assert_eq!(w, 250);
        assert_eq!(cells.len(), 8);
        assert!((cells[0].handshake_ms - 150.0).abs() < 1e-6);
        assert!((cells[1].handshake_ms - 150.0).abs() < 1e-6);
        let mut c = Cells::new(Some(1));
        c.add(&sample(10.0, 0.0));
        assert!(c.widened);
        assert!(c.cells.len() <= MAX_FIXED);
    }
}
