"""Decoding: reassembled connections to the rows of the `pdus`, `pairs` and `connections` tables.

Roles, framing, decoding with `kipwire.codec`, request/response pairing, topic names for topic
ids, and the controller's partition records in metadata fetches. Built on `captures.reading`;
`pipeline` runs the steps in process for one input.
"""
