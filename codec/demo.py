"""`make demo`: build and decode the wire messages the KIPs this project implements add."""

from __future__ import annotations

import json
import uuid

from .. import codec

TOPIC = uuid.UUID("5f8a3c1e-2b4d-4e6f-9a0b-1c2d3e4f5a6b")


def _show(title: str, data: bytes, decoded: object) -> None:
    print(f"== {title}: {len(data)} bytes")
    for i in range(0, len(data), 32):
        print("   " + data[i : i + 32].hex(" "))
    for key, value in codec.to_json(decoded).items():
        print(f"   {key}: {json.dumps(value)}")
    print()


def main() -> None:
    """Print three KIP messages as bytes and as decoded JSON."""
    # KIP-966: the controller records a new ELR and LastKnownElr in tagged fields 6 and 7.
    record = codec.encode_record(
        "PartitionChangeRecord",
        2,
        {
            "partition_id": 0,
            "topic_id": TOPIC,
            "isr": [1],
            "leader": 1,
            "eligible_leader_replicas": [2, 3],
            "last_known_elr": [],
        },
    )
    name, version, body = codec.decode_record(record)
    _show(f"{name} v{version} (KIP-966 ELR, tags 0, 1, 6, 7)", record, body)

    # KIP-903 and KIP-704: the leader proposes an ISR with each member's broker epoch.
    alter = codec.encode_request(
        codec.ApiKey.ALTER_PARTITION,
        3,
        {
            "broker_id": 1,
            "broker_epoch": 42,
            "topics": [
                {
                    "topic_id": TOPIC,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_epoch": 7,
                            "new_isr_with_epochs": [
                                {"broker_id": 1, "broker_epoch": 42},
                                {"broker_id": 2, "broker_epoch": 17},
                            ],
                            "leader_recovery_state": 0,
                            "partition_epoch": 12,
                        }
                    ],
                }
            ],
        },
        correlation_id=7,
        client_id="broker-1",
    )
    req = codec.decode_request(alter)
    _show("AlterPartitionRequest v3 (KIP-903 broker epochs)", alter, req.body)

    # KIP-903: a follower's Fetch carries its broker epoch in the tagged ReplicaState.
    fetch = codec.encode_request(
        codec.ApiKey.FETCH,
        15,
        {
            "replica_state": {"replica_id": 2, "replica_epoch": 17},
            "max_wait_ms": 500,
            "min_bytes": 1,
            "topics": [{"topic_id": TOPIC, "partitions": [{"partition": 0, "fetch_offset": 100}]}],
        },
        correlation_id=8,
        client_id="broker-2",
    )
    req = codec.decode_request(fetch)
    _show("FetchRequest v15 (KIP-903 ReplicaState, tag 1)", fetch, req.body)


if __name__ == "__main__":
    main()
