//! `rttlens bench`'s HTTP/1.1 response reader over arbitrary bytes, cut
//! into reads at input-chosen places: it must end (the stream ends with
//! EOF), never panic, and on success leave in the buffer only bytes that
//! came after the response.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rttlens_bench::conn::read_response;
use tokio::io::AsyncReadExt;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, body)) = data.split_first() else {
        return;
    };
    // reads of 1..=256 bytes, chained: one read never crosses a cut
    let step = usize::from(cut).max(1);
    let mut reader: Box<dyn tokio::io::AsyncRead + Unpin> = Box::new(&[][..]);
    let chunks: Vec<&[u8]> = body.chunks(step).collect();
    for c in chunks.into_iter().rev() {
        reader = Box::new(std::io::Cursor::new(c.to_vec()).chain(reader));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut buf = Vec::new();
    if rt.block_on(read_response(&mut reader, &mut buf)).is_ok() {
        assert!(buf.len() <= body.len());
        assert!(
            body.ends_with(&buf),
            "left bytes that were not the input's tail"
        );
    }
});
