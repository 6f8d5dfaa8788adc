//! `tcp_info` and `set_tcp_fastopen` on real kernel sockets over loopback
//! (no root needed: the default namespace's `lo`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rttlens_sys::{set_tcp_fastopen, tcp_info, TcpInfo};

const SENT: usize = 200_000;

/// Poll `tcp_info` until `done` holds, at most 2 s.
fn wait_for(s: &TcpStream, done: impl Fn(&TcpInfo) -> bool) -> TcpInfo {
    let start = Instant::now();
    loop {
        let i = tcp_info(s).expect("getsockopt(TCP_INFO)");
        if done(&i) || start.elapsed() > Duration::from_secs(2) {
            return i;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn tcp_info_after_a_transfer() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut got = 0;
        let mut buf = vec![0u8; 65536];
        while got < SENT {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "client closed early");
            got += n;
        }
        s.write_all(b"ok").unwrap();
        let i = wait_for(&s, |i| i.bytes_acked == Some(2));
        (i, got, s)
    });
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(&vec![b'x'; SENT]).unwrap();
    let mut ok = [0u8; 2];
    c.read_exact(&mut ok).unwrap();
    let ci = wait_for(&c, |i| i.bytes_acked == Some(SENT as u64 + 1));
    let (si, got, _keep_open) = server.join().unwrap();
    assert_eq!(got, SENT);

    // Client: the sender of SENT bytes.
    assert_eq!(ci.state, 1, "TCP_ESTABLISHED");
    assert!(ci.rtt_us > 0, "{ci:?}");
    assert!(ci.snd_mss > 0 && ci.rcv_mss > 0, "{ci:?}");
    assert!(ci.rto_us >= 200_000, "Linux TCP_RTO_MIN is 200 ms: {ci:?}");
    assert!(ci.snd_cwnd >= 10, "RFC 6928 initial window: {ci:?}");
    // bytes_acked is snd_una's advance: the SYN's sequence number too.
    assert_eq!(ci.bytes_acked, Some(SENT as u64 + 1));
    assert_eq!(ci.bytes_sent, Some(SENT as u64));
    assert_eq!(ci.bytes_received, Some(2));
    assert_eq!(ci.bytes_retrans, Some(0));
    assert_eq!(ci.total_retrans, 0);
    assert!(ci
        .min_rtt_us
        .is_some_and(|m| m > 0 && m <= ci.rtt_us.max(1) * 8));
    assert!(ci.data_segs_out.is_some_and(|n| n >= 1));
    assert!(ci.segs_out >= ci.data_segs_out);
    assert!(ci.delivery_rate.is_some_and(|r| r > 0), "{ci:?}");
    assert!(ci.snd_wnd.is_some_and(|w| w > 0), "{ci:?}");
    assert!(
        ci.has_timestamps() && ci.has_sack() && ci.has_wscale(),
        "{ci:?}"
    );
    assert!(!ci.syn_data_acked());
    assert_eq!(ci.fastopen_client_fail, Some(0));

    // Server: the receiver.
    assert_eq!(si.bytes_received, Some(SENT as u64));
    // The passive opener's snd_una jumps past its SYN without counting it.
    assert_eq!(si.bytes_acked, Some(2), "{si:?}");
    assert!(si.data_segs_in.is_some_and(|n| n >= 1));
}

#[test]
fn tcp_info_of_a_non_tcp_socket_is_an_error() {
    let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    assert!(tcp_info(&u).is_err());
}

#[test]
fn set_tcp_fastopen_on_a_listener() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    set_tcp_fastopen(&l, 16).expect("TCP_FASTOPEN on a TCP listener");
    let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    assert!(set_tcp_fastopen(&u, 16).is_err(), "not a TCP socket");
    assert!(
        set_tcp_fastopen(&l, u32::MAX).is_err(),
        "qlen above i32::MAX"
    );
}
