//! A finding as the record carries it: its id, cost, confidence, typed
//! facts and the frames that prove it (docs/json.md "Findings").
//!
//! Defined in `detect::finding`, where the detectors fill it (an earlier
//! layer than `model`), and read from here by every renderer and consumer.

pub use crate::base::cost::Cost;
pub use crate::base::fact::{Args, Fact, Value};
pub use crate::detect::finding::{Confidence, Evidence, Finding, Level};
