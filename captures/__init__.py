"""Kafka captures by stage: read traffic, decode it into tables, compare two decodes.

The face, importable from here (each loaded on first use, so `import kipwire.captures` stays
light): `decode_capture` (one capture to rows, in process), `write_tables` (rows to Parquet,
pyarrow), `run_local` (many inputs to Parquet in process, pyarrow), `run_decode` (the same on
Spark, pyspark), `compare` and `write_report` (two decoded folders to a report; its ranked
headline is a list of `SemanticDifference`), `replay` (a capture's client requests sent again to
any cluster, the answers compared), and `pcap`.

Stages, arrows pointing down (a stage imports only the stages above it):

`reading/` (standard library only; no Kafka decoding):
  `reading.pcap`           pcap/pcapng readers, the index scan that splits big files
  `reading.pcapng_writer`  pcapng of synthetic TCP conversations (sans-I/O with `data_to_send()`)
  `reading.packets`        link, IPv4/IPv6 and TCP headers: a captured frame to a TCP segment
  `reading.walk`           a capture's TCP segments, through the compiled walker when built
  `reading.native`         the pipeline's compiled hot loops (C beside the Python they stand in
                           for, which stays the reference), when built
  `reading.tcpflow`        tcpflow stream files (one per direction) as TCP segments
  `reading.frame_dumps`    raw size-prefixed frame dumps as segments; what a request header
                           and a frame dump look like
  `reading.inputs`         input paths to files of a kind (pcap, tcpflow, frames), rotation sets
  `reading.reassembly`     TCP segments to per-direction byte streams, gaps recorded (TCP only:
                           roles from the handshake, or left to `decoding.roles`)

`decoding/` (needs `kipwire.codec`; `topic_ids` also pyarrow):
  `decoding.roles`         which end is the client when no handshake says so
  `decoding.framing`       a reassembled direction cut into size-prefixed frames, resynchronised
  `decoding.bodies`        what a decoded body says: the row's facts and its JSON, in one walk
                           (in C with the compiled codec: `codec/_compiled/jsontext.c`)
  `decoding.jsontext`      loads that C walk when the compiled codec is active
  `decoding.pairing`       frames decoded and responses paired with requests, as row dicts
                           (or as columns, `Columns`, for the engines)
  `decoding.redaction`     SASL tokens whose secret a secured mock's recorder replaced by `*`s
  `decoding.pipeline`      one input to the rows of the three tables, in process
  `decoding.topic_ids`     topic names for rows that name topics by id (Fetch v13+), from Metadata
  `decoding.metadata_records`  the controller's partition records (ELR fields) in metadata fetches

`engines/` (pyarrow; the `spark_` modules also pyspark):
  `engines.schema`           every Arrow schema (tables, fragments, union), and the Spark DDL
  `engines.table_files`      Parquet part files written by any task, finished and summarised
                             (the local engine's summary counted while writing)
  `engines.fragments`        an input or packet range as segment fragments, for the shuffle
  `engines.fragment_decode`  fragments, sorted by connection, decoded into a sink
  `engines.local`            the in-process engine (`--engine local`)
  `engines.spark_datasource` the `kafkacapture` PySpark data source: how inputs split into tasks
  `engines.balance`          connections packed onto decode tasks by size (no pyspark)
  `engines.spark_session`    local, spark-submit and Spark Connect sessions for the job
  `engines.spark_job`        the PySpark job: one pass from inputs to Parquet
  `engines.py_files`         the zip of kipwire for `spark-submit --py-files`

`comparing/` (reads the tables; pyarrow):
  `comparing.model`      what compare loads and reports: captures, connections, differences
  `comparing.load`       a decoded folder's tables as exchanges per connection
  `comparing.rules`      which fields are semantic, volatile or ignored; the `--rules` file
  `comparing.normalise`  volatile fields (ids, times, ports) made comparable
  `comparing.align`      connections matched and requests aligned across captures
  `comparing.diffs`      field-path differences between two bodies, grouped
  `comparing.semantic`   differences in meaning, in user terms, ranked: the headline
  `comparing.timeline`   partition state over time from the metadata log, and its picture
  `comparing.compare`    the comparison, `write_report`, and the `compare` command
  `comparing.report`     report.md, self-contained report.html, diff.json
  `comparing.charts`     the PNG charts of the report, standard library only

`replaying/` (every stage above, and `kipwire.client` to talk to the target cluster):
  `replaying.extract`    client connections and their request frames out of captures, and
                         what cannot be replayed (`NotReplayed` rows)
  `replaying.rules`      the rewrite rules: producer ids, member ids, topic ids, fetch sessions
  `replaying.routing`    which target broker: leaders by Metadata, coordinators
  `replaying.auth`       TLS and SASL (PLAIN, SCRAM) with the target's own credentials
  `replaying.spark_extract`  the same extraction in Spark tasks, for large captures (pyspark)
  `replaying.causality`  no request before the responses it may depend on
  `replaying.sender`     the connections again, against the target, recorded
  `replaying.result`     both sides decoded and compared, and the `ReplayResult`
  `replaying.replay`     `replay`, the steps joined

`pcap` is the stable name of the reading stage's capture files (`PcapngWriter`, `PacketReader`,
`scan_index`) for other packages; `cli` is `kipwire-capture` (`python -m kipwire.captures`):
`decode`, `compare`, `replay` and `py-files`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .comparing.compare import compare, write_report
    from .comparing.model import SemanticDifference
    from .decoding.pipeline import decode_capture
    from .engines.local import run_local
    from .engines.schema import write_tables
    from .engines.spark_job import run_decode
    from .replaying.replay import replay

__all__ = [
    "SemanticDifference",
    "compare",
    "decode_capture",
    "pcap",
    "replay",
    "run_decode",
    "run_local",
    "write_report",
    "write_tables",
]

# Loaded on first use: the engines need pyarrow or pyspark, which the mock broker (it imports
# `captures.pcap`) must not pull in.
_WHERE = {
    "compare": ".comparing.compare",
    "SemanticDifference": ".comparing.model",
    "write_report": ".comparing.compare",
    "decode_capture": ".decoding.pipeline",
    "run_local": ".engines.local",
    "write_tables": ".engines.schema",
    "run_decode": ".engines.spark_job",
    "replay": ".replaying.replay",
}


def __getattr__(name: str) -> Any:
    if name == "pcap":
        return importlib.import_module(".pcap", __name__)
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name], __name__), name)
