//! The `findings` table: one row per finding of a connection
//! (docs/schema.md "findings").

use std::sync::Arc;

use arrow_array::builder::{
    Float64Builder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
};
use rttlens_core::model::Connection;

use crate::facts::{int, FactListCol, MapCol};
use crate::key::KeyCols;
use crate::{Columns, Key};

/// The columns being filled.
pub(crate) struct Cols {
    rows: usize,
    key: KeyCols,
    rank: Int32Builder,
    id: StringBuilder,
    cost_ms: Float64Builder,
    cost_rtts: Float64Builder,
    confidence: StringBuilder,
    evidence_frames: ListBuilder<Int64Builder>,
    facts: MapCol,
    evidence: FactListCol,
    confidence_reasons: FactListCol,
    references: ListBuilder<StringBuilder>,
}

impl Default for Cols {
    fn default() -> Self {
        Cols {
            rows: 0,
            key: KeyCols::default(),
            rank: Int32Builder::new(),
            id: StringBuilder::new(),
            cost_ms: Float64Builder::new(),
            cost_rtts: Float64Builder::new(),
            confidence: StringBuilder::new(),
            evidence_frames: ListBuilder::new(Int64Builder::new()),
            facts: MapCol::default(),
            evidence: FactListCol::default(),
            confidence_reasons: FactListCol::default(),
            references: ListBuilder::new(StringBuilder::new()),
        }
    }
}

impl Cols {
    /// Rows so far.
    pub(crate) fn len(&self) -> usize {
        self.rows
    }

    /// A row per finding of `c`, costliest first (the engine's order).
    pub(crate) fn push(&mut self, c: &Connection, key: &Key<'_>) {
        for (rank, f) in c.findings().iter().enumerate() {
            self.rows += 1;
            self.key.append(key);
            self.rank
                .append_value(i32::try_from(rank).unwrap_or(i32::MAX));
            self.id.append_value(f.id);
            self.cost_ms.append_value(f.cost.ms);
            self.cost_rtts.append_option(f.cost.rtts);
            self.confidence.append_value(f.confidence.level.as_str());
            for e in &f.evidence {
                self.evidence_frames.values().append_value(int(e.frame));
            }
            self.evidence_frames.append(true);
            self.facts.push(&f.facts);
            self.evidence.push(
                f.evidence
                    .iter()
                    .flat_map(|e| e.facts.iter().map(move |x| (Some(e.frame), x))),
            );
            self.confidence_reasons
                .push(f.confidence.why.iter().map(|x| (None, x)));
            for r in &f.references {
                self.references.values().append_value(r);
            }
            self.references.append(true);
        }
    }

    /// The rows so far as columns, and a fresh start.
    pub(crate) fn finish(&mut self) -> Columns {
        self.rows = 0;
        let mut c = Columns::default();
        self.key.finish(&mut c);
        c.add("rank", "count", false, Arc::new(self.rank.finish()));
        c.add("id", "name", false, Arc::new(self.id.finish()));
        c.add("cost_ms", "ms", false, Arc::new(self.cost_ms.finish()));
        c.add("cost_rtts", "RTTs", true, Arc::new(self.cost_rtts.finish()));
        c.add(
            "confidence",
            "name",
            false,
            Arc::new(self.confidence.finish()),
        );
        c.add(
            "evidence_frames",
            "list of frames",
            false,
            Arc::new(self.evidence_frames.finish()),
        );
        c.add(
            "facts",
            "map of values",
            false,
            Arc::new(self.facts.finish()),
        );
        c.add(
            "evidence",
            "list of facts",
            false,
            Arc::new(self.evidence.finish()),
        );
        c.add(
            "confidence_reasons",
            "list of facts",
            false,
            Arc::new(self.confidence_reasons.finish()),
        );
        c.add(
            "references",
            "list of text",
            false,
            Arc::new(self.references.finish()),
        );
        c
    }
}
