"""Comparing: two decoded captures (their Parquet tables) to a report of what differs.

Reads the tables the engines wrote; uses `captures.decoding` only for the controller's partition
records. The `compare` and `write_report` functions are also `kipwire.captures.compare` and
`kipwire.captures.write_report`.
"""
