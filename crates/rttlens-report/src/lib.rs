//! Renderers for rttlens reports.
