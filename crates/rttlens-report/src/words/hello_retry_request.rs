//! The words of `hello-retry-request` (`rttlens_core::detect::hello_retry_request`).

use super::prelude::*;

/// The title, from the finding's facts (`None`: the detector still writes it).
pub(super) fn title(_f: &Finding) -> Option<String> {
    None
}

/// The fix, from the finding's facts (`None`: the detector still writes it).
pub(super) fn fix(_f: &Finding) -> Option<String> {
    None
}

/// A fact of kind `hello-retry-request.*` as a sentence.
pub(super) fn fact(_kind: &str, _a: &Args) -> Option<String> {
    None
}
