//! Wire decoding (link layer, IP, TCP).
