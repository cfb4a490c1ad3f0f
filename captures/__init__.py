"""Kafka captures: read traffic, reassemble and decode it into tables, compare two decodes.

Reading (standard library only: `pcap` imports without construct, pyarrow or pyspark, so the
mock broker records with it):
  `pcap`           pcap/pcapng readers, the index scan that splits big files, `PcapngWriter`
  `pcapng_writer`  pcapng of synthetic TCP conversations (sans-I/O with `data_to_send()`)
  `packets`        link, IPv4/IPv6 and TCP headers: a captured frame to a TCP segment
  `tcpflow`        tcpflow stream files (one per direction) as TCP segments
  `frame_dumps`    raw size-prefixed frame dumps as the segments of one connection
  `inputs`         input paths to files of a kind (pcap, tcpflow, frames), rotation sets, checks

From segments to rows (needs `kipwire.codec` to decode):
  `reassembly`     TCP segments to per-direction byte streams, gaps recorded
  `roles`          which end is the client when no SYN says so
  `framing`        a reassembled direction cut into size-prefixed frames, with resynchronisation
  `pairing`        frames decoded and responses paired with requests, as row dicts
  `topic_ids`      topic names for rows that name topics by id (Fetch v13+), from Metadata
  `pipeline`       one input to the rows of the three tables, in process

Tables and engines (pyarrow; `datasource` and `job` also pyspark):
  `schema`         every Arrow schema (tables, fragments, union), and the Spark DDL from them
  `table_files`    Parquet part files written by any task, finished and summarised
  `local_engine`   the in-process engine (`--engine local`)
  `fragments`      an input or packet range as segment fragments, for the Spark shuffle
  `fragment_decode`  fragments, sorted by connection, decoded into a sink
  `datasource`     the `kafkacapture` PySpark data source: partitions and their readers
  `job`            the PySpark job: one pass from inputs to Parquet
  `py_files`       the zip of kipwire for `spark-submit --py-files`

Comparing two decodes:
  `compare`        loads two decoded captures, compares them, the `compare` command
  `compare_model`  what compare loads and reports: captures, connections, differences
  `normalise`      volatile fields (ids, times, ports) made comparable
  `align`          connections matched and requests aligned across captures
  `diffs`          field-path differences between two bodies, grouped
  `metadata_records`  the controller's partition records (ELR fields) from metadata fetches
  `report`         report.md, self-contained report.html, diff.json
  `charts`         the PNG charts of the report, standard library only

`cli` is `kipwire-capture` (`python -m kipwire.captures`): `decode` and `compare`.
"""
