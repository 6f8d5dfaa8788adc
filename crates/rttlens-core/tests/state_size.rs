//! What an open connection's state takes, boxed once per connection: the
//! `Conn` within mimalloc's 2,560-byte size class (the next is 3,072), the
//! TLS tracker within its 896-byte one, its server side (made at the
//! server's first byte) within 640 bytes (bench/README.md "issue 41, third
//! session" and "fifth session"). A field that pushes one into the next
//! class costs every open connection 512 or 128 bytes of memory; a TLS
//! record, kept up to `RECORD_DETAIL_CAP` a direction, stays at 56 bytes.
//! 64-bit targets.

#[cfg(target_pointer_width = "64")]
#[test]
fn a_connection_s_state_fits_its_size_class() {
    use rttlens_core::flow::Conn;
    use rttlens_core::proto::protocols::Protocols;
    use rttlens_core::proto::tls::TlsTracker;
    use std::mem::size_of;
    let conn = size_of::<Conn<Protocols>>();
    let tls = size_of::<TlsTracker>();
    // up to RECORD_DETAIL_CAP of them a direction
    let record = size_of::<rttlens_core::proto::tls::TlsRecord>();
    eprintln!("Conn<Protocols> {conn} B, TlsTracker {tls} B, TlsRecord {record} B");
    assert!(conn <= 2560, "Conn<Protocols> is {conn} B");
    assert!(tls <= 896, "TlsTracker is {tls} B");
    assert!(record <= 56, "TlsRecord is {record} B");
}
