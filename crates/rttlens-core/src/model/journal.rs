//! What `--qlog` keeps of a QUIC connection: every packet with its header
//! fields and frames, the RTT samples, the declared losses and the HTTP/3
//! frame headers (`QuicJournal`).
//!
//! Defined beside the table that records it (`quic::journal`) and read
//! from here by the qlog writer (`rttlens_report::qlog`).

pub use crate::proto::h3::H3FrameRec;
pub use crate::quic::journal::{
    JournalFrame, JournalLoss, JournalPacket, JournalSample, QuicJournal,
};
pub use crate::quic::packet::PacketType;
