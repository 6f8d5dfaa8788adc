//! The words of a report only when someone will read them.
//!
//! A report's findings and ladder carry sentences (titles, evidence lines,
//! the reasons for a confidence, fixes). On a capture of tens of thousands
//! of connections, text output shows a handful of them in full, yet making
//! those sentences took about a tenth of the whole run: float formatting
//! and an allocation each. The pipeline therefore first judges a connection
//! *plain*: the same analysis and detectors, the same ids, costs, frames and
//! spans, with every sentence left empty. Only a connection that could still
//! be shown is judged again with its sentences (`pipeline::report_of`).
//!
//! Plain is a mode of the thread (a scoped flag, set by [`plain`] around one
//! connection's analysis), not an argument threaded through every detector:
//! the sentences are made in a few hundred places, and the mode must not
//! change anything else they compute.

use std::cell::Cell;

thread_local! {
    /// Whether this thread is judging a connection plain.
    static PLAIN: Cell<bool> = const { Cell::new(false) };
}

/// Whether sentences are wanted: `false` inside [`plain`].
pub(crate) fn wanted() -> bool {
    !PLAIN.with(Cell::get)
}

/// Runs `f` with sentences left empty ([`text!`](crate::base::text::text),
/// [`owned`]); the mode ends with `f`, also when it panics.
pub(crate) fn plain<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            PLAIN.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(PLAIN.with(|p| p.replace(true)));
    f()
}

/// `s` as an owned sentence, or an empty one inside [`plain`] (a `&str`
/// is then not copied).
pub(crate) fn owned(s: impl Into<String>) -> String {
    if wanted() {
        s.into()
    } else {
        String::new()
    }
}

/// `format!`, or an empty `String` inside [`plain`] (the arguments are
/// not formatted).
macro_rules! text {
    ($($arg:tt)*) => {
        if $crate::base::text::wanted() {
            ::std::format!($($arg)*)
        } else {
            ::std::string::String::new()
        }
    };
}
pub(crate) use text;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_leaves_sentences_empty_and_ends_with_its_closure() {
        let x = 1.5_f64;
        assert_eq!(text!("{x:.2} ms"), "1.50 ms");
        let inside = plain(|| (text!("{x:.2} ms"), owned("fix"), wanted()));
        assert_eq!(inside, (String::new(), String::new(), false));
        assert!(wanted());
        assert_eq!(owned("fix"), "fix");
        // nested: the outer mode comes back
        plain(|| {
            plain(|| ());
            assert!(!wanted());
        });
        assert!(wanted());
        // a panic inside ends the mode too
        let r = std::panic::catch_unwind(|| plain(|| panic!("inside")));
        assert!(r.is_err());
        assert!(wanted());
    }
}
