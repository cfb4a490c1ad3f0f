"""Kafka captures: pcap/pcapng read and write, TCP reassembly, framing, decoding into table rows.

Modules by concern (none imports pyspark; only decoding needs `codec`):
`pcap` (readers, index scan, `PcapngWriter`), `packets` (link/IP/TCP headers), `reassembly`
(TCP streams and roles), `framing` (size-prefixed frames and resynchronisation), `pairing`
(decode and pair into rows), `streams` (tcpflow files), `pipeline` (one file to rows).
"""
