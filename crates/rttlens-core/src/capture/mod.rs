//! Capture input (pcap, pcapng).
