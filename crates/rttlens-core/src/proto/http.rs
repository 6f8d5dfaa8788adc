//! HTTP/1.1 messages over cleartext TCP.
