//! Protocols above TCP.
