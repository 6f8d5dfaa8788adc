//! The words of `sender-window-cap` (`rttlens_core::detect::sender_window_cap`).

use super::prelude::*;

/// The title, from the finding's facts (`None`: the detector still writes it).
pub(super) fn title(_f: &Finding) -> Option<String> {
    None
}

/// The fix, from the finding's facts (`None`: the detector still writes it).
pub(super) fn fix(_f: &Finding) -> Option<String> {
    None
}

/// A fact of kind `sender-window-cap.*` as a sentence.
pub(super) fn fact(_kind: &str, _a: &Args) -> Option<String> {
    None
}
