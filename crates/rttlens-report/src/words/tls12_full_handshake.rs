//! The words of `tls12-full-handshake` (`rttlens_core::detect::tls12_full_handshake`).

use super::prelude::*;

/// The title, from the finding's facts (`None`: the detector still writes it).
pub(super) fn title(_f: &Finding) -> Option<String> {
    None
}

/// The fix, from the finding's facts (`None`: the detector still writes it).
pub(super) fn fix(_f: &Finding) -> Option<String> {
    None
}

/// A fact of kind `tls12-full-handshake.*` as a sentence.
pub(super) fn fact(_kind: &str, _a: &Args) -> Option<String> {
    None
}
