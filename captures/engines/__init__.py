"""Engines: the decode of many inputs into Parquet tables, in process or on Spark.

Both engines cut inputs into the same fragments and decode them with `captures.decoding`; the
local one in this process (pyarrow), the Spark one as a PySpark job (pyarrow and pyspark).
"""
