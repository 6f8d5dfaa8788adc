//! The words of `h2-flow-control-stall` (`rttlens_core::detect::h2_flow_control_stall`).

use super::prelude::*;

/// The title, from the finding's facts (`None`: the detector still writes it).
pub(super) fn title(_f: &Finding) -> Option<String> {
    None
}

/// The fix, from the finding's facts (`None`: the detector still writes it).
pub(super) fn fix(_f: &Finding) -> Option<String> {
    None
}

/// A fact of kind `h2-flow-control-stall.*` as a sentence.
pub(super) fn fact(_kind: &str, _a: &Args) -> Option<String> {
    None
}
