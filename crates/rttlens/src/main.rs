//! rttlens command-line interface.
fn main() {}
