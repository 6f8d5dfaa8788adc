//! The columns that name a row's connection in the `findings` and
//! `requests` tables: `ts`, `uid`, `community_id`, `transport`,
//! `connection` (docs/schema.md), filled and finished the same way in both.

use std::sync::Arc;

use arrow_array::builder::{Int64Builder, StringBuilder, TimestampMicrosecondBuilder};

use crate::{Columns, Key};

/// The key columns being filled.
pub(crate) struct KeyCols {
    ts: TimestampMicrosecondBuilder,
    uid: StringBuilder,
    community_id: StringBuilder,
    transport: StringBuilder,
    connection: Int64Builder,
}

impl Default for KeyCols {
    fn default() -> Self {
        KeyCols {
            ts: TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            uid: StringBuilder::new(),
            community_id: StringBuilder::new(),
            transport: StringBuilder::new(),
            connection: Int64Builder::new(),
        }
    }
}

impl KeyCols {
    /// One row's key.
    pub(crate) fn append(&mut self, key: &Key<'_>) {
        self.ts.append_value(key.ts_us);
        self.uid.append_value(&key.uid);
        self.community_id.append_value(key.community_id);
        self.transport.append_value(key.transport);
        self.connection.append_value(key.index);
    }

    /// The key columns into `c`, in the tables' order, and a fresh start.
    pub(crate) fn finish(&mut self, c: &mut Columns) {
        c.add(
            "ts",
            "µs since 1970-01-01 UTC",
            false,
            Arc::new(self.ts.finish()),
        );
        c.add("uid", "text", false, Arc::new(self.uid.finish()));
        c.add(
            "community_id",
            "text",
            false,
            Arc::new(self.community_id.finish()),
        );
        c.add(
            "transport",
            "name",
            false,
            Arc::new(self.transport.finish()),
        );
        c.add(
            "connection",
            "count",
            false,
            Arc::new(self.connection.finish()),
        );
    }
}
