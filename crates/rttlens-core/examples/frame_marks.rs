//! Print what the engine's flow layer says of each frame, one line per mark
//! (`FRAME MARK`), to compare with Wireshark's `tcp.analysis.*` flags:
//! `cargo run --example frame_marks -- capture.pcap`.

use std::process::ExitCode;

use rttlens_core::capture::CaptureReader;
use rttlens_core::pipeline;

fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1) else {
        eprintln!("usage: frame_marks CAPTURE");
        return ExitCode::from(2);
    };
    let marks = CaptureReader::open(std::path::Path::new(&path))
        .map_err(|e| e.to_string())
        .and_then(|mut r| pipeline::frame_marks(&mut r).map_err(|e| e.to_string()));
    match marks {
        Ok(marks) => {
            for (frame, m) in marks {
                println!("{frame} {m:?}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("frame_marks: {}: {e}", path.to_string_lossy());
            ExitCode::from(2)
        }
    }
}
