"""kipwire.mockbroker.controller: a sans-I/O KRaft controller (KIP-966, KIP-704, KIP-903)."""
