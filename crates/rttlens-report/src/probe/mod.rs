//! The probe's report (`rttlens probe`, its plain types in
//! `rttlens-probe-model`, filled by `rttlens-probe`) rendered: a text
//! waterfall ([`write_text`], [`text`]) or the JSON document of
//! `docs/probe.md` ([`write_json`], [`json`]), in the same family as
//! `analyze`'s (`schema_version`, `tool`, `source`, `connections`,
//! `capture`); `--path`'s hops as text ([`path`]).

pub mod json;
pub mod path;
pub mod text;

pub use json::write_json;
pub use text::write_text;
