//! Wire decoding (temporary shim; replaced by the wire layer branch).
#![allow(missing_docs)]
use crate::seq::SeqNumber;
use std::net::IpAddr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpFlags(pub u16);
impl TcpFlags {
    pub const FIN: u16 = 0x01;
    pub const SYN: u16 = 0x02;
    pub const RST: u16 = 0x04;
    pub const PSH: u16 = 0x08;
    pub const ACK: u16 = 0x10;
    pub fn contains(self, f: u16) -> bool {
        self.0 & f == f
    }
}
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastOpen {
    CookieRequest { experimental: bool },
    Cookie { len: u8, experimental: bool },
}
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpOptions {
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    pub sack_blocks: [(SeqNumber, SeqNumber); 4],
    pub sack_count: u8,
    pub timestamps: Option<(u32, u32)>,
    pub fast_open: Option<FastOpen>,
    pub malformed: bool,
}
#[derive(Debug, Clone)]
pub struct TcpSegment<'a> {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: SeqNumber,
    pub ack: SeqNumber,
    pub flags: TcpFlags,
    pub window: u16,
    pub options: TcpOptions,
    pub payload: &'a [u8],
    pub payload_len: u32,
}
