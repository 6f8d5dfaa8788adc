//! Capture filters in tcpdump's syntax (a documented subset of
//! pcap-filter(7)), applied to each TCP segment before flow tracking.
//!
//! ```text
//! expr      = or
//! or        = and { ("or" | "||") and }
//! and       = not { ("and" | "&&") not }
//! not       = ("not" | "!") not | "(" expr ")" | primitive
//! primitive = [proto] [dir] kind value     e.g. host 10.0.0.1, tcp dst port 443
//!           | proto                         tcp, ip, ip6 (udp, icmp, icmp6, arp, sctp never match)
//! proto     = "tcp" | "ip" | "ip6"
//! dir       = "src" | "dst" | "src or dst" | "src and dst"
//! kind      = "host" ADDR | "net" ADDR/LEN | "net" ADDR "mask" MASK | "port" N | "portrange" N-M
//! ```
//!
//! As in tcpdump, a bare value after `and`/`or` repeats the primitive
//! before it: `port 80 or 443` is `port 80 or port 443`, `host a and b` is
//! `host a and host b`. Addresses are IPv4 or IPv6 literals (no host
//! names); ports are numbers (no service names).
//!
//! Why our own: libpcap's compiler (the `pcap` crate) would make a C library
//! a build and run-time dependency of every user for one option, and the
//! Rust crates that parse this syntax are one-off 0.1 releases. The subset
//! is what TCP analysis can use: every packet reaching it is TCP over IP,
//! already decoded, so primitives on other protocols or raw bytes
//! (`ether`, `vlan`, `tcp[13] & 2`) have nothing to add and are refused
//! with an error naming them.

use std::fmt;
use std::net::IpAddr;

use crate::wire::{TcpSegment, UdpDatagram};

/// A parsed filter, ready to match segments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    expr: Expr,
    text: String,
}

/// Why a filter expression could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("filter {text:?}: at column {column}: {message}")]
pub struct FilterError {
    /// The expression as given.
    pub(crate) text: String,
    /// 1-based character column of the offending token.
    pub column: usize,
    /// What was wrong there.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Qualifier {
    Src,
    Dst,
    Either,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proto {
    Tcp,
    /// UDP (QUIC's datagrams).
    Udp,
    Ip,
    Ip6,
    /// A protocol rttlens never tracks (icmp, …).
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Host,
    Net,
    Port,
    PortRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Test {
    Net { net: IpAddr, prefix: u8 },
    Ports { lo: u16, hi: u16 },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expr {
    Proto(Proto),
    Test(Qualifier, Test),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

impl Filter {
    /// Parses `text`.
    ///
    /// # Errors
    ///
    /// [`FilterError`] naming the column of the first token that is not
    /// part of the subset, or of a malformed address, net or port.
    pub fn parse(text: &str) -> Result<Filter, FilterError> {
        let tokens = tokenize(text);
        let mut p = Parser {
            text,
            tokens,
            pos: 0,
            last: None,
        };
        if p.tokens.is_empty() {
            return Err(p.error_at(0, "empty filter expression"));
        }
        let expr = p.or()?;
        if let Some(t) = p.peek() {
            let msg = format!("unexpected {:?} (expected and, or, or the end)", t.1);
            return Err(p.error_at(t.0, &msg));
        }
        Ok(Filter {
            expr,
            text: text.to_string(),
        })
    }

    /// Whether `seg` passes the filter.
    pub fn matches(&self, seg: &TcpSegment<'_>) -> bool {
        eval(
            &self.expr,
            &Ends {
                tcp: true,
                src: seg.src,
                dst: seg.dst,
                src_port: seg.src_port,
                dst_port: seg.dst_port,
            },
        )
    }

    /// Whether the UDP datagram `d` (QUIC) passes the filter.
    pub fn matches_udp(&self, d: &UdpDatagram<'_>) -> bool {
        eval(
            &self.expr,
            &Ends {
                tcp: false,
                src: d.src,
                dst: d.dst,
                src_port: d.src_port,
                dst_port: d.dst_port,
            },
        )
    }

    /// The expression as given.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a filter reads of a packet.
struct Ends {
    tcp: bool,
    src: IpAddr,
    dst: IpAddr,
    src_port: u16,
    dst_port: u16,
}

fn eval(e: &Expr, seg: &Ends) -> bool {
    match e {
        Expr::Proto(Proto::Tcp) => seg.tcp,
        Expr::Proto(Proto::Udp) => !seg.tcp,
        Expr::Proto(Proto::Ip) => seg.src.is_ipv4(),
        Expr::Proto(Proto::Ip6) => seg.src.is_ipv6(),
        Expr::Proto(Proto::Never) => false,
        Expr::Not(x) => !eval(x, seg),
        Expr::And(a, b) => eval(a, seg) && eval(b, seg),
        Expr::Or(a, b) => eval(a, seg) || eval(b, seg),
        Expr::Test(dir, t) => {
            let one = |src: bool| match t {
                Test::Net { net, prefix } => {
                    in_net(if src { seg.src } else { seg.dst }, *net, *prefix)
                }
                Test::Ports { lo, hi } => {
                    let p = if src { seg.src_port } else { seg.dst_port };
                    (*lo..=*hi).contains(&p)
                }
            };
            match dir {
                Qualifier::Src => one(true),
                Qualifier::Dst => one(false),
                Qualifier::Either => one(true) || one(false),
                Qualifier::Both => one(true) && one(false),
            }
        }
    }
}

/// Whether `a` lies in `net`/`prefix` (same address family only).
fn in_net(a: IpAddr, net: IpAddr, prefix: u8) -> bool {
    match (a, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// Words, operators and parentheses, each with its 0-based char column.
fn tokenize(text: &str) -> Vec<(usize, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur: Option<(usize, String)> = None;
    let mut col = 0;
    while let Some(&ch) = chars.get(col) {
        // operators stand alone as in tcpdump: `port 80&&host a` is three
        // words and an operator, like `port 80 && host a`
        let doubled = matches!(ch, '&' | '|') && chars.get(col + 1) == Some(&ch);
        let op_len = if doubled {
            2
        } else {
            usize::from(matches!(ch, '(' | ')' | '!'))
        };
        if ch.is_whitespace() || op_len > 0 {
            out.extend(cur.take());
            if op_len > 0 {
                out.push((col, chars[col..col + op_len].iter().collect()));
            }
            col += op_len.max(1);
            continue;
        }
        cur.get_or_insert_with(|| (col, String::new())).1.push(ch);
        col += 1;
    }
    out.extend(cur);
    out
}

struct Parser<'a> {
    text: &'a str,
    tokens: Vec<(usize, String)>,
    pos: usize,
    /// The last primitive's qualifiers, for a bare value after and/or.
    last: Option<(Qualifier, Kind)>,
}

const SUBSET: &str = "the filter subset is: host, net, port, portrange (with src/dst), tcp, ip, ip6, and/or/not, parentheses";

impl Parser<'_> {
    fn peek(&self) -> Option<&(usize, String)> {
        self.tokens.get(self.pos)
    }

    fn word(&self) -> Option<&str> {
        self.peek().map(|t| t.1.as_str())
    }

    fn column(&self) -> usize {
        self.peek().map_or(self.text.chars().count(), |t| t.0)
    }

    fn error_at(&self, col: usize, msg: &str) -> FilterError {
        FilterError {
            text: self.text.to_string(),
            column: col + 1,
            message: msg.to_string(),
        }
    }

    fn error(&self, msg: &str) -> FilterError {
        self.error_at(self.column(), msg)
    }

    fn eat(&mut self, words: &[&str]) -> bool {
        if self.word().is_some_and(|w| words.contains(&w)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr, FilterError> {
        let mut e = self.and()?;
        while self.eat(&["or", "||"]) {
            let r = self.and()?;
            e = Expr::Or(Box::new(e), Box::new(r));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, FilterError> {
        let mut e = self.not()?;
        while self.eat(&["and", "&&"]) {
            let r = self.not()?;
            e = Expr::And(Box::new(e), Box::new(r));
        }
        Ok(e)
    }

    fn not(&mut self) -> Result<Expr, FilterError> {
        if self.eat(&["not", "!"]) {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        if self.eat(&["("]) {
            let e = self.or()?;
            if !self.eat(&[")"]) {
                return Err(self.error("missing )"));
            }
            return Ok(e);
        }
        self.primitive()
    }

    fn primitive(&mut self) -> Result<Expr, FilterError> {
        let Some(w) = self.word().map(str::to_string) else {
            return Err(self.error("expression ends where a primitive was expected"));
        };
        // a bare value after and/or repeats the last primitive's qualifiers
        if let Some((dir, kind)) = self.last {
            if starts_value(&w) {
                return self.value(dir, kind);
            }
        }
        let proto = match w.as_str() {
            "tcp" => Some(Proto::Tcp),
            "ip" => Some(Proto::Ip),
            "ip6" => Some(Proto::Ip6),
            "udp" => Some(Proto::Udp),
            "icmp" | "icmp6" | "arp" | "rarp" | "sctp" | "igmp" => Some(Proto::Never),
            _ => None,
        };
        if let Some(proto) = proto {
            self.pos += 1;
            let qualified = self.word().is_some_and(|w| {
                matches!(w, "src" | "dst" | "host" | "net" | "port" | "portrange")
            });
            if !qualified {
                return Ok(Expr::Proto(proto));
            }
            let test = self.qualified()?;
            return Ok(Expr::And(Box::new(Expr::Proto(proto)), Box::new(test)));
        }
        self.qualified()
    }

    /// `[dir] kind value`.
    fn qualified(&mut self) -> Result<Expr, FilterError> {
        let dir = if self.eat(&["src"]) {
            if self.eat(&["or"]) {
                self.expect_dst()?;
                Qualifier::Either
            } else if self.eat(&["and"]) {
                self.expect_dst()?;
                Qualifier::Both
            } else {
                Qualifier::Src
            }
        } else if self.eat(&["dst"]) {
            Qualifier::Dst
        } else {
            Qualifier::Either
        };
        let kind = match self.word() {
            Some("host") => Kind::Host,
            Some("net") => Kind::Net,
            Some("port") => Kind::Port,
            Some("portrange") => Kind::PortRange,
            Some(other) => {
                let msg = format!("{other:?} is not supported ({SUBSET})");
                return Err(self.error(&msg));
            }
            None => return Err(self.error("expected host, net, port or portrange")),
        };
        self.pos += 1;
        self.value(dir, kind)
    }

    fn expect_dst(&mut self) -> Result<(), FilterError> {
        if self.eat(&["dst"]) {
            Ok(())
        } else {
            Err(self.error("expected dst (src or dst, src and dst)"))
        }
    }

    fn value(&mut self, dir: Qualifier, kind: Kind) -> Result<Expr, FilterError> {
        let Some((col, v)) = self.peek().cloned() else {
            return Err(self.error("expected a value"));
        };
        self.pos += 1;
        let bad = |what: &str| self.error_at(col, &format!("{v:?} is not {what}"));
        let test = match kind {
            Kind::Host => {
                let a: IpAddr = v
                    .parse()
                    .map_err(|_| bad("an IPv4 or IPv6 address (host names are not looked up)"))?;
                Test::Net {
                    net: a,
                    prefix: if a.is_ipv4() { 32 } else { 128 },
                }
            }
            Kind::Net => self.net(&v, col)?,
            Kind::Port => {
                let p: u16 = v.parse().map_err(|_| bad("a port number 0-65535"))?;
                Test::Ports { lo: p, hi: p }
            }
            Kind::PortRange => {
                let (a, b) = v.split_once('-').ok_or_else(|| bad("a port range N-M"))?;
                let lo: u16 = a.parse().map_err(|_| bad("a port range N-M"))?;
                let hi: u16 = b.parse().map_err(|_| bad("a port range N-M"))?;
                Test::Ports {
                    lo: lo.min(hi),
                    hi: lo.max(hi),
                }
            }
        };
        self.last = Some((dir, kind));
        Ok(Expr::Test(dir, test))
    }

    /// `ADDR/LEN`, `ADDR mask MASK`, or a bare address (all its bits).
    fn net(&mut self, v: &str, col: usize) -> Result<Test, FilterError> {
        let bad = |what: &str| self.error_at(col, &format!("{v:?} is not {what}"));
        if let Some((a, len)) = v.split_once('/') {
            let net: IpAddr = a.parse().map_err(|_| bad("a network ADDR/LEN"))?;
            let max = if net.is_ipv4() { 32 } else { 128 };
            let prefix: u8 = len
                .parse()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| bad("a network ADDR/LEN with a valid length"))?;
            return Ok(Test::Net { net, prefix });
        }
        let net: IpAddr = v.parse().map_err(|_| bad("a network ADDR/LEN"))?;
        if self.eat(&["mask"]) {
            let Some((mcol, m)) = self.peek().cloned() else {
                return Err(self.error("expected a mask after mask"));
            };
            self.pos += 1;
            let mask: std::net::Ipv4Addr = m
                .parse()
                .map_err(|_| self.error_at(mcol, &format!("{m:?} is not an IPv4 mask")))?;
            let bits = u32::from(mask);
            if !net.is_ipv4() || bits.leading_ones() + bits.trailing_zeros() != 32 {
                return Err(self.error_at(mcol, "mask must be a contiguous IPv4 netmask"));
            }
            return Ok(Test::Net {
                net,
                prefix: bits.leading_ones() as u8,
            });
        }
        let prefix = if net.is_ipv4() { 32 } else { 128 };
        Ok(Test::Net { net, prefix })
    }
}

/// Whether a word is a value (address, number, range) rather than a keyword.
fn starts_value(w: &str) -> bool {
    let addr = w
        .split('/')
        .next()
        .is_some_and(|a| a.parse::<IpAddr>().is_ok());
    let num = w
        .split('-')
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    addr || num
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::seq::SeqNumber;
    use crate::wire::{TcpFlags, TcpOptions};

    fn seg(src: &str, sp: u16, dst: &str, dp: u16) -> TcpSegment<'static> {
        TcpSegment {
            src: src.parse().unwrap(),
            dst: dst.parse().unwrap(),
            src_port: sp,
            dst_port: dp,
            seq: SeqNumber(1),
            ack: SeqNumber(0),
            flags: TcpFlags::ACK,
            window: 100,
            options: TcpOptions::default(),
            payload: &[],
            payload_len: 0,
            ip_id: 0,
        }
    }

    fn m(f: &str, s: &TcpSegment<'_>) -> bool {
        Filter::parse(f)
            .unwrap_or_else(|e| panic!("{e}"))
            .matches(s)
    }

    #[test]
    fn hosts_ports_nets_and_directions() {
        let s = seg("10.0.0.1", 40000, "192.168.1.9", 443);
        assert!(m("host 10.0.0.1", &s));
        assert!(m("host 192.168.1.9 and port 443", &s));
        assert!(m("tcp port 443", &s));
        assert!(m("dst port 443 and src host 10.0.0.1", &s));
        assert!(!m("src port 443", &s));
        assert!(!m("dst host 10.0.0.1", &s));
        assert!(m("net 192.168.0.0/16", &s));
        assert!(m("dst net 192.168.1.0 mask 255.255.255.0", &s));
        assert!(!m("src net 192.168.0.0/16", &s));
        assert!(m("portrange 400-500", &s));
        assert!(m("src or dst port 443", &s));
        assert!(!m("src and dst port 443", &s));
        assert!(m("ip", &s));
        assert!(!m("ip6", &s));
        assert!(!m("udp", &s));
        assert!(m("not udp", &s));
        assert!(m("! host 10.9.9.9", &s));
    }

    #[test]
    fn precedence_parentheses_and_repeated_qualifiers() {
        let s = seg("10.0.0.1", 40000, "10.0.0.2", 80);
        assert!(m("port 8080 or 80", &s));
        assert!(!m("port 8080 or 81", &s));
        assert!(m("host 10.0.0.9 or 10.0.0.2", &s));
        // and binds tighter than or
        assert!(m("port 1 and port 2 or port 80", &s));
        assert!(!m("port 1 and (port 2 or port 80)", &s));
        assert!(m("(port 1 or port 80) && host 10.0.0.1", &s));
        assert!(m("not (port 1 || port 2)", &s));
        // operators need no spaces around them, as in tcpdump
        assert!(m("port 80&&host 10.0.0.1", &s));
        assert!(!m("port 80&&!host 10.0.0.1", &s));
        assert!(m("(port 1||port 80)", &s));
    }

    #[test]
    fn ipv6_hosts_and_nets() {
        let s = seg("fd00:77::1", 5000, "fd00:77::2", 443);
        assert!(m("host fd00:77::2", &s));
        assert!(m("net fd00:77::/64 and ip6", &s));
        assert!(!m("net 10.0.0.0/8", &s));
        assert!(!m("ip", &s));
    }

    #[test]
    fn errors_name_the_column() {
        let e = Filter::parse("host 10.0.0.1 and ether host aa:bb").unwrap_err();
        assert_eq!(e.column, 19, "{e}");
        assert!(e.message.contains("not supported"), "{e}");
        let e = Filter::parse("port 99999").unwrap_err();
        assert_eq!(e.column, 6, "{e}");
        let e = Filter::parse("host example.com").unwrap_err();
        assert!(e.message.contains("not looked up"), "{e}");
        assert!(Filter::parse("(port 1").is_err());
        assert!(Filter::parse("").is_err());
        assert!(Filter::parse("port 1 port 2").is_err());
        assert!(Filter::parse("net 10.0.0.0/33").is_err());
        assert!(Filter::parse("net 10.0.0.0 mask 255.0.255.0").is_err());
        assert!(Filter::parse("tcp[13] & 2 != 0").is_err());
    }
}
