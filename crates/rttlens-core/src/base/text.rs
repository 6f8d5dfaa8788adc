//! Sentences still written by a detector not yet moved to typed facts
//! (issue 40): `text!` is `format!` and [`owned`] an `Into<String>`, so a
//! detector's legacy sentences read the same until it gives its facts
//! typed (`base::fact`) and `rttlens_report::words` writes them. The mode
//! that left sentences unmade for connections no output showed is gone
//! with the sentences themselves: the engine now analyses each connection
//! once.

/// `s` as an owned sentence.
pub(crate) fn owned(s: impl Into<String>) -> String {
    s.into()
}

/// `format!`, for the legacy sentences.
macro_rules! text {
    ($($arg:tt)*) => {
        ::std::format!($($arg)*)
    };
}
pub(crate) use text;
