//! nginx (todo)
