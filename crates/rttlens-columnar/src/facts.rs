//! Typed facts as columns: a finding's parameters, what each evidence frame
//! shows and the reasons for its confidence.
//!
//! A fact's values differ by finding id (a window cap in bytes, a wait in
//! ms, a side), so no fixed set of columns holds them all. Each set of
//! values is a `map<string, value>` keyed by the value's name, and a value
//! is one struct whatever its kind: `kind` says which field holds it
//! (`int` for bytes, segments, counts and frames; `real` for every number,
//! integers widened, ms and ratios rounded to 3 decimals as in the JSON;
//! `text` for names; `flag`; `list_real` or `list_text` for lists). A map,
//! not one column per name: the names are open (a new detector adds its
//! own without a schema change), a query reads `facts['cap_bytes'].int` in
//! Spark, DuckDB and ClickHouse alike, and the kind keeps the unit the
//! name alone would lose (bytes against a count).

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::{Array, ArrayRef, ListArray, MapArray, StructArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields};
use rttlens_core::base::cost::round3;
use rttlens_core::model::finding::{Args, Fact, Value};

/// The kind of a value, as the `kind` field names it.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Bytes(_) => "bytes",
        Value::Segments(_) => "segments",
        Value::Count(_) => "count",
        Value::Frame(_) => "frame",
        Value::Ms(_) => "ms",
        Value::Number(_) => "number",
        Value::Name(_) => "name",
        Value::Flag(_) => "flag",
        Value::List(_) => "list",
    }
}

/// An unsigned value as the signed 64-bit integer every engine reads
/// (Spark reads Parquet's unsigned 64-bit as a decimal); no count, size
/// or frame number comes near 2⁶³.
pub(crate) fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The values of facts, one map per fact (or per finding).
#[derive(Debug)]
pub(crate) struct MapCol {
    /// Entries before each map, and after the last.
    offsets: Vec<i32>,
    keys: StringBuilder,
    kind: StringBuilder,
    int: Int64Builder,
    real: Float64Builder,
    text: StringBuilder,
    flag: BooleanBuilder,
    list_real: ListBuilder<Float64Builder>,
    list_text: ListBuilder<StringBuilder>,
}

impl Default for MapCol {
    fn default() -> Self {
        MapCol {
            offsets: vec![0],
            keys: StringBuilder::new(),
            kind: StringBuilder::new(),
            int: Int64Builder::new(),
            real: Float64Builder::new(),
            text: StringBuilder::new(),
            flag: BooleanBuilder::new(),
            list_real: ListBuilder::new(Float64Builder::new()),
            list_text: ListBuilder::new(StringBuilder::new()),
        }
    }
}

impl MapCol {
    /// One map: the values of `args`, in the engine's order.
    pub(crate) fn push(&mut self, args: &Args) {
        let mut n = 0;
        for (name, v) in args.iter() {
            self.keys.append_value(name);
            self.value(v);
            n += 1;
        }
        let last = self.offsets.last().copied().unwrap_or(0);
        self.offsets.push(last + n);
    }

    fn value(&mut self, v: &Value) {
        self.kind.append_value(kind(v));
        self.int.append_option(v.as_u64().map(int));
        self.real.append_option(v.as_f64().map(round3));
        self.text.append_option(v.as_str());
        self.flag.append_option(v.as_bool());
        match v.as_list() {
            Some(items) => {
                for x in items {
                    self.list_real
                        .values()
                        .append_option(x.as_f64().map(round3));
                    self.list_text.values().append_option(x.as_str());
                }
                self.list_real.append(true);
                self.list_text.append(true);
            }
            None => {
                self.list_real.append(false);
                self.list_text.append(false);
            }
        }
    }

    /// The maps so far, and a fresh start.
    pub(crate) fn finish(&mut self) -> MapArray {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let arrays: Vec<ArrayRef> = vec![
            Arc::new(self.kind.finish()),
            Arc::new(self.int.finish()),
            Arc::new(self.real.finish()),
            Arc::new(self.text.finish()),
            Arc::new(self.flag.finish()),
            Arc::new(self.list_real.finish()),
            Arc::new(self.list_text.finish()),
        ];
        let values = StructArray::new(value_fields(), arrays, None);
        let entries = StructArray::new(
            entry_fields(),
            vec![Arc::new(self.keys.finish()), Arc::new(values)],
            None,
        );
        MapArray::new(
            Arc::new(Field::new(
                "entries",
                DataType::Struct(entry_fields()),
                false,
            )),
            OffsetBuffer::new(offsets.into()),
            entries,
            None,
            false,
        )
    }
}

/// A value's fields (see the module's doc).
fn value_fields() -> Fields {
    Fields::from(vec![
        Field::new("kind", DataType::Utf8, true),
        Field::new("int", DataType::Int64, true),
        Field::new("real", DataType::Float64, true),
        Field::new("text", DataType::Utf8, true),
        Field::new("flag", DataType::Boolean, true),
        Field::new_list(
            "list_real",
            Field::new_list_field(DataType::Float64, true),
            true,
        ),
        Field::new_list(
            "list_text",
            Field::new_list_field(DataType::Utf8, true),
            true,
        ),
    ])
}

/// A map entry: the value's name and the value.
fn entry_fields() -> Fields {
    Fields::from(vec![
        Field::new("keys", DataType::Utf8, false),
        Field::new("values", DataType::Struct(value_fields()), false),
    ])
}

/// Lists of facts, one list per row: each fact with its frame (evidence)
/// or without (the reasons for a confidence), its kind and its values.
#[derive(Debug)]
pub(crate) struct FactListCol {
    offsets: Vec<i32>,
    frame: Int64Builder,
    kind: StringBuilder,
    args: MapCol,
}

impl Default for FactListCol {
    fn default() -> Self {
        FactListCol {
            offsets: vec![0],
            frame: Int64Builder::new(),
            kind: StringBuilder::new(),
            args: MapCol::default(),
        }
    }
}

impl FactListCol {
    /// One row's list.
    pub(crate) fn push<'a>(&mut self, facts: impl IntoIterator<Item = (Option<u64>, &'a Fact)>) {
        let mut n = 0;
        for (frame, f) in facts {
            self.frame.append_option(frame.map(int));
            self.kind.append_value(f.kind);
            self.args.push(&f.args);
            n += 1;
        }
        let last = self.offsets.last().copied().unwrap_or(0);
        self.offsets.push(last + n);
    }

    /// The lists so far, and a fresh start.
    pub(crate) fn finish(&mut self) -> ListArray {
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        let args = self.args.finish();
        let fields = Fields::from(vec![
            Field::new("frame", DataType::Int64, true),
            Field::new("kind", DataType::Utf8, true),
            Field::new("args", args.data_type().clone(), true),
        ]);
        let items = StructArray::new(
            fields.clone(),
            vec![
                Arc::new(self.frame.finish()),
                Arc::new(self.kind.finish()),
                Arc::new(args),
            ],
            None,
        );
        ListArray::new(
            Arc::new(Field::new_list_field(DataType::Struct(fields), true)),
            OffsetBuffer::new(offsets.into()),
            Arc::new(items),
            None,
        )
    }
}
