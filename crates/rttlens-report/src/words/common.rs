//! Facts every detector may give (kind `common.*`): reasons for a lowered
//! confidence, shared evidence.

use super::prelude::*;

/// No finding id of its own.
pub(super) fn title(_f: &Finding) -> Option<Text> {
    None
}

/// No finding id of its own.
pub(super) fn fix(_f: &Finding) -> Option<Text> {
    None
}

/// A fact of kind `common.*` as a sentence.
pub(super) fn fact(kind: &str, _a: &Args) -> Option<Text> {
    Some(match kind {
        "common.capture-dropped" => "the capture dropped packets of this connection".into(),
        _ => return None,
    })
}
