//! The nearest analogue of Zeek `conn.log`'s `history` the engine can
//! give: Zeek's letters for the events a finished connection keeps, each
//! once, in the order of their first frame (upper case: the client, Zeek's
//! originator; lower case: the server). Zeek's letters (its
//! `base/protocols/conn/main.zeek`): `S` a SYN without ACK, `h` the
//! SYN-ACK, `A` the ACK completing the handshake, `D`/`d` the first
//! payload, `T`/`t` the first retransmission, `F`/`f` the FIN, `R`/`r` the
//! first reset. Zeek's others are not kept by the engine and never appear:
//! `a` (other pure ACKs), `c` (bad checksum), `g` (content gap), `w`
//! (zero window), `i`, `q`, `^`; and Zeek repeats some letters as their
//! counts grow, this never does.

use crate::analysis::Analysis;
use crate::base::side::Side;

/// The history string of `a` (empty when none of its events was seen,
/// which cannot happen for a connection with a packet: its first has
/// data, a SYN, a FIN or a reset, or is a pure ACK, which has no letter).
pub fn history(a: &Analysis) -> String {
    let mut events: Vec<(u64, char)> = Vec::with_capacity(10);
    if let Some(s) = a.syn() {
        events.push((s.first.frame, 'S'));
    }
    if let Some(s) = a.syn_ack() {
        events.push((s.first.frame, 'h'));
    }
    if let Some(k) = a.handshake_ack() {
        events.push((k.frame, 'A'));
    }
    for (side, data, retx, fin) in [(Side::Client, 'D', 'T', 'F'), (Side::Server, 'd', 't', 'f')] {
        if let Some(d) = a.first_data(side) {
            events.push((d.frame, data));
        }
        if let Some(r) = a.retransmissions(side).iter().map(|r| r.at.frame).min() {
            events.push((r, retx));
        }
        if let Some(f) = a.fin(side) {
            events.push((f.frame, fin));
        }
    }
    if let Some((side, at)) = a.rst() {
        events.push((at.frame, if side == Side::Client { 'R' } else { 'r' }));
    }
    // stable: at one frame, the order above (a SYN before its data)
    events.sort_by_key(|&(frame, _)| frame);
    events.into_iter().map(|(_, c)| c).collect()
}
