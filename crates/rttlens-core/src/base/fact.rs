//! What the engine says, as data: a finding's parameters, what each of its
//! frames shows, the reasons for its confidence (docs/design.md §5).
//!
//! The engine names a fact and gives its typed values; it writes no
//! sentence. `rttlens-report` turns each fact into words (one template per
//! finding id and fact kind, `rttlens_report::words`), and the JSON and the
//! columnar outputs carry the values themselves. This is rustc's
//! diagnostic shape (a message id and named arguments, `Diag::arg`), which
//! lets one record be text, JSON, a Parquet row or a Prometheus label.
//!
//! A value's name carries its unit where it has one (`flight_bytes`,
//! `wait_ms`); the [`Value`] variant says what kind of quantity it is.

use std::borrow::Cow;

use smallvec::SmallVec;

use crate::base::side::Side;
use crate::base::time::Duration;

/// One typed value of a fact.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A size in bytes (a window, a flight, a segment's payload).
    Bytes(u64),
    /// A number of TCP segments or QUIC packets.
    Segments(u64),
    /// A count of things (rounds, retransmissions, requests, times).
    Count(u64),
    /// A frame number (Wireshark's, 1-based).
    Frame(u64),
    /// A duration in milliseconds, unrounded (outputs round it to 3
    /// decimals; a sentence picks its own precision).
    Ms(f64),
    /// A dimensionless number: a ratio, a factor, a rate in the unit its
    /// name gives (`mbit_s`).
    Number(f64),
    /// A name: a side (`client`, `server`), a limit, a version, a cipher.
    Name(Cow<'static, str>),
    /// Yes or no.
    Flag(bool),
    /// Several values of one kind, in order (the flights of slow-start
    /// rounds, the streams that waited, the versions offered).
    List(Vec<Value>),
}

impl Value {
    /// The value as an unsigned integer, when it is one.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Bytes(v) | Value::Segments(v) | Value::Count(v) | Value::Frame(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a float (integers widen).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Ms(v) | Value::Number(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }

    /// The value as a name.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Name(s) => Some(s),
            _ => None,
        }
    }

    /// The value as a flag.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Flag(b) => Some(b),
            _ => None,
        }
    }

    /// The value as a list.
    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(v) => Some(v),
            _ => None,
        }
    }
}

impl serde::Serialize for Value {
    /// A bare JSON value: a number, a string or a boolean. Milliseconds and
    /// numbers are rounded to 3 decimals, as every figure of the outputs.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Bytes(v) | Value::Segments(v) | Value::Count(v) | Value::Frame(v) => {
                s.serialize_u64(*v)
            }
            Value::Ms(v) | Value::Number(v) => s.serialize_f64(crate::base::cost::round3(*v)),
            Value::Name(n) => s.serialize_str(n),
            Value::Flag(b) => s.serialize_bool(*b),
            Value::List(v) => s.collect_seq(v),
        }
    }
}

impl From<&'static str> for Value {
    fn from(s: &'static str) -> Value {
        Value::Name(Cow::Borrowed(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Name(Cow::Owned(s))
    }
}

impl From<Cow<'static, str>> for Value {
    fn from(s: Cow<'static, str>) -> Value {
        Value::Name(s)
    }
}

impl From<Side> for Value {
    fn from(s: Side) -> Value {
        Value::Name(Cow::Borrowed(s.as_str()))
    }
}

impl From<Duration> for Value {
    fn from(d: Duration) -> Value {
        Value::Ms(d.as_millis_f64())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Flag(b)
    }
}

/// A fact's named values, in the order the engine gave them; most facts
/// have a handful, held inline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args(SmallVec<[(&'static str, Value); 3]>);

impl Args {
    /// No values.
    pub fn new() -> Args {
        Args(SmallVec::new())
    }

    /// Adds (or replaces) the value `name`.
    pub fn set(&mut self, name: &'static str, v: impl Into<Value>) {
        let v = v.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = v,
            None => self.0.push((name, v)),
        }
    }

    /// `self` with the value `name` added.
    pub fn with(mut self, name: &'static str, v: impl Into<Value>) -> Args {
        self.set(name, v);
        self
    }

    /// The value `name`, when given.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// Every value, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.0.iter().map(|(n, v)| (*n, v))
    }

    /// Whether there is no value.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The unsigned integer `name` (0 when absent: a template asking for
    /// a value the engine did not give is a bug the report tests catch).
    pub fn u64(&self, name: &str) -> u64 {
        self.get(name).and_then(Value::as_u64).unwrap_or(0)
    }

    /// The number `name` (0 when absent).
    pub fn f64(&self, name: &str) -> f64 {
        self.get(name).and_then(Value::as_f64).unwrap_or(0.0)
    }

    /// The name `name` (empty when absent).
    pub fn str(&self, name: &str) -> &str {
        self.get(name).and_then(Value::as_str).unwrap_or("")
    }

    /// The flag `name` (false when absent).
    pub fn flag(&self, name: &str) -> bool {
        self.get(name).and_then(Value::as_bool).unwrap_or(false)
    }

    /// The list `name` (empty when absent).
    pub fn list(&self, name: &str) -> &[Value] {
        self.get(name).and_then(Value::as_list).unwrap_or(&[])
    }
}

impl serde::Serialize for Args {
    /// An object of the values by name.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (n, v) in &self.0 {
            m.serialize_entry(n, v)?;
        }
        m.end()
    }
}

/// One fact: its kind (`<finding id or detector>.<what>`, kebab-case) and
/// its values. The report writes it as a sentence; the JSON keeps both.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Fact {
    /// Stable kebab-case kind, e.g. `nagle.small-segment`.
    pub kind: &'static str,
    /// Its values.
    #[serde(skip_serializing_if = "Args::is_empty")]
    pub args: Args,
}

impl Fact {
    /// A fact of `kind` with no values yet.
    pub fn new(kind: &'static str) -> Fact {
        Fact {
            kind,
            args: Args::new(),
        }
    }

    /// `self` with the value `name` added.
    pub fn with(mut self, name: &'static str, v: impl Into<Value>) -> Fact {
        self.args.set(name, v);
        self
    }
}

/// `fact!("kind", name = value, …)`: a [`Fact`] of that kind with those
/// values (each through `Into<Value>`, or a [`Value`] constructor for units
/// an integer alone does not say: `Value::Bytes(n)`).
macro_rules! fact {
    ($kind:expr $(, $name:ident = $v:expr)* $(,)?) => {
        $crate::base::fact::Fact::new($kind)$(.with(stringify!($name), $v))*
    };
}
pub(crate) use fact;

/// `args!(name = value, …)`: [`Args`] with those values.
macro_rules! args {
    ($($name:ident = $v:expr),* $(,)?) => {
        $crate::base::fact::Args::new()$(.with(stringify!($name), $v))*
    };
}
pub(crate) use args;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::time::Duration;

    #[test]
    fn facts_keep_their_values_typed_and_serialize_bare() {
        let f = fact!(
            "nagle.small-segment",
            bytes = Value::Bytes(120),
            sender = Side::Client,
            wait = Duration::from_micros(40_123),
            resumed = true,
        );
        assert_eq!(f.args.u64("bytes"), 120);
        assert_eq!(f.args.str("sender"), "client");
        assert!((f.args.f64("wait") - 40.123).abs() < 1e-9);
        assert!(f.args.flag("resumed"));
        assert_eq!(f.args.u64("absent"), 0);
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"kind":"nagle.small-segment","args":{"bytes":120,"sender":"client","wait":40.123,"resumed":true}}"#
        );
        // a value set twice keeps its first place and its last value
        let a = args!(x = Value::Count(1), y = Value::Count(2)).with("x", Value::Count(3));
        assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"x":3,"y":2}"#);
        assert_eq!(
            serde_json::to_string(&Fact::new("k")).unwrap(),
            r#"{"kind":"k"}"#
        );
        let l = args!(flights = Value::List(vec![Value::Bytes(1), Value::Bytes(2)]));
        assert_eq!(l.list("flights").len(), 2);
        assert!(l.list("absent").is_empty());
        assert_eq!(serde_json::to_string(&l).unwrap(), r#"{"flights":[1,2]}"#);
    }
}
