//! The words of `server-think-time`, `client-think-time` (`rttlens_core::detect::think_time`).

use super::prelude::*;

/// The title, from the finding's facts (`None`: the detector still writes it).
pub(super) fn title(_f: &Finding) -> Option<String> {
    None
}

/// The fix, from the finding's facts (`None`: the detector still writes it).
pub(super) fn fix(_f: &Finding) -> Option<String> {
    None
}

/// A fact of kind `think-time.*` as a sentence.
pub(super) fn fact(_kind: &str, _a: &Args) -> Option<String> {
    None
}
