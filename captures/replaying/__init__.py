"""Replaying a capture against any cluster and comparing the answers (`replay.replay`).

Stage after `comparing/` (it imports every stage above it, and `kipwire.client` to talk to the
target): `extract` -> `rules`, `routing`, `causality` -> `sender` -> `result`, joined by
`replay`.
"""
