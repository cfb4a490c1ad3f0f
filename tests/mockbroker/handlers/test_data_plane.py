"""Produce, Fetch and ListOffsets on the wire: acks, min ISR, long polls, sessions, isolation."""

from __future__ import annotations

import threading
import time

import pytest
from kafka_wire import WireClient

from kipwire import codec
from kipwire.codec import APIS, ApiKey, ErrorCode, _compiled
from kipwire.codec.records import build_batch, iter_batches
from kipwire.mockbroker import MockCluster, serve
from kipwire.mockbroker.gathered import Chunks


@pytest.fixture(scope="module")
def cluster():
    """Two brokers; topic p (1 partition, RF 2) and topic strict (min.insync.replicas 3)."""
    with MockCluster(brokers=2) as running:
        running.create_topic("p", partitions=1, replication_factor=2)
        running.create_topic(
            "strict", partitions=1, replication_factor=2, config={"min.insync.replicas": "3"}
        )
        yield running


def _leader(cluster, topic: str) -> str:
    leader = cluster.partition(topic, 0).leader
    return cluster.bootstrap_servers.split(",")[leader - 1]


def _produce_body(topic: str, values: list[bytes], acks: int = -1) -> dict:
    records = build_batch([{"value": v} for v in values])
    return {
        "acks": acks,
        "timeout_ms": 1000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }


def _fetch_body(
    topic: str,
    offset: int,
    *,
    wait_ms: int = 0,
    min_bytes: int = 1,
    session_id: int = 0,
    isolation: int = 0,
) -> dict:
    return {
        "max_wait_ms": wait_ms,
        "min_bytes": min_bytes,
        "isolation_level": isolation,
        "session_id": session_id,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}
                ],
            }
        ],
    }


def test_acks_all_uses_the_effective_min_isr(cluster):
    # kip-rules A.1/A.3: min ISR 3 on 2 replicas is min(3, 2) = 2, which a full ISR meets
    # (NOT_ENOUGH_REPLICAS below it: tests/mockbroker/test_replication.py)
    with WireClient(_leader(cluster, "strict")) as client:
        body = client.call(ApiKey.PRODUCE, 9, _produce_body("strict", [b"x"]))
        (part,) = body["responses"][0]["partition_responses"]
        assert part["error_code"] == ErrorCode.NONE


def test_acks_zero_gets_no_response_and_the_record_is_written(cluster):
    latest = {
        "replica_id": -1,
        "topics": [{"name": "p", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
    }

    def latest_offset(client: WireClient) -> int:
        return client.call(ApiKey.LIST_OFFSETS, 7, latest)["topics"][0]["partitions"][0]["offset"]

    with WireClient(_leader(cluster, "p")) as client:
        start = latest_offset(client)
        client.send(ApiKey.PRODUCE, 9, _produce_body("p", [b"fire", b"forget"], acks=0))
        # The latest offset a consumer may read is the high watermark: it reaches the two records
        # once the follower has fetched them, which takes a fetch round trip after the append.
        deadline = time.monotonic() + 5
        offsets = [latest_offset(client)]
        while offsets[-1] < start + 2 and time.monotonic() < deadline and len(offsets) < 10_000:
            offsets.append(latest_offset(client))
    assert offsets[-1] == start + 2
    assert offsets == sorted(offsets)


def test_produce_to_a_follower_is_not_leader(cluster):
    follower = [a for a in cluster.bootstrap_servers.split(",") if a != _leader(cluster, "p")]
    with WireClient(follower[0]) as client:
        body = client.call(ApiKey.PRODUCE, 9, _produce_body("p", [b"x"]))
    part = body["responses"][0]["partition_responses"][0]
    assert part["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_fetch_long_poll_returns_when_records_arrive(cluster):
    address = _leader(cluster, "p")
    with WireClient(address) as client:
        end = client.call(
            ApiKey.LIST_OFFSETS,
            7,
            {
                "replica_id": -1,
                "topics": [{"name": "p", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
            },
        )["topics"][0]["partitions"][0]["offset"]

    def produce_later() -> None:
        time.sleep(0.3)
        with WireClient(address) as producer:
            producer.call(ApiKey.PRODUCE, 9, _produce_body("p", [b"late"]))

    thread = threading.Thread(target=produce_later)
    with WireClient(address) as client:
        start = time.perf_counter()
        thread.start()
        body = client.call(ApiKey.FETCH, 12, _fetch_body("p", end, wait_ms=5000))
        waited = time.perf_counter() - start
    thread.join()
    part = body["responses"][0]["partitions"][0]
    assert 0.25 <= waited < 3.0
    assert [r.value for b in iter_batches(part["records"]) for r in b.records] == [b"late"]


def test_fetch_with_nothing_new_waits_max_wait_ms(cluster):
    with WireClient(_leader(cluster, "p")) as client:
        end = client.call(
            ApiKey.LIST_OFFSETS,
            7,
            {
                "replica_id": -1,
                "topics": [{"name": "p", "partitions": [{"partition_index": 0, "timestamp": -1}]}],
            },
        )["topics"][0]["partitions"][0]["offset"]
        start = time.perf_counter()
        body = client.call(ApiKey.FETCH, 12, _fetch_body("p", end, wait_ms=300))
        waited = time.perf_counter() - start
    assert 0.28 <= waited < 2.0
    assert body["responses"][0]["partitions"][0]["records"] == b""


def test_fetch_sessions_are_full_fetches_and_unknown_ids_are_refused(cluster):
    with WireClient(_leader(cluster, "p")) as client:
        body = client.call(ApiKey.FETCH, 12, {**_fetch_body("p", 0), "session_epoch": 0})
        assert body["session_id"] == 0 and body["error_code"] == ErrorCode.NONE
        body = client.call(ApiKey.FETCH, 12, _fetch_body("p", 0, session_id=77))
        assert body["error_code"] == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_fetch_past_the_end_is_offset_out_of_range(cluster):
    with WireClient(_leader(cluster, "p")) as client:
        body = client.call(ApiKey.FETCH, 12, _fetch_body("p", 10_000))
    assert body["responses"][0]["partitions"][0]["error_code"] == ErrorCode.OFFSET_OUT_OF_RANGE


def test_corrupt_batch_is_corrupt_message(cluster):
    records = bytearray(build_batch([{"value": b"v"}]))
    records[-1] ^= 1
    body = _produce_body("p", [b"placeholder"])
    body["topic_data"][0]["partition_data"][0]["records"] = bytes(records)
    with WireClient(_leader(cluster, "p")) as client:
        part = client.call(ApiKey.PRODUCE, 9, body)["responses"][0]["partition_responses"][0]
    assert part["error_code"] == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.skipif(not codec.compiled, reason="the compiled codec is not built")
def test_produce_and_fetch_answers_are_taken_by_the_compiled_encoder(cluster, monkeypatch):
    # a key the version lacks (a topic's name beside its id) sends a whole response to the
    # Python builder, many times slower on a Fetch response of a megabyte
    answered = []

    def spy(key: int, version: int, body: dict, *, correlation_id: int) -> bytearray:
        if key in (ApiKey.PRODUCE, ApiKey.FETCH):
            answered.append((key, version, body))
        return encode(key, version, body, correlation_id=correlation_id)

    encode = serve.encode_frame
    monkeypatch.setattr(serve, "encode_frame", spy)
    with WireClient(_leader(cluster, "p")) as client:
        metadata = client.call(ApiKey.METADATA, 12, {"topics": [{"name": "p"}]})
        topic_id = metadata["topics"][0]["topic_id"]
        for version in (9, 12):
            client.call(ApiKey.PRODUCE, version, _produce_body("p", [b"compiled"]))
        produce = _produce_body("p", [b"by id"])
        produce["topic_data"][0] = {**produce["topic_data"][0], "topic_id": topic_id}
        del produce["topic_data"][0]["name"]
        client.call(ApiKey.PRODUCE, 13, produce)
        client.call(ApiKey.FETCH, 12, _fetch_body("p", 0))
        fetch = _fetch_body("p", 0)
        fetch["topics"][0] = {"topic_id": topic_id, "partitions": fetch["topics"][0]["partitions"]}
        client.call(ApiKey.FETCH, 16, fetch)
    # the followers' fetches (in sessions) are answered in this process too, and checked alike
    assert {(key, version) for key, version, _ in answered} >= {
        (ApiKey.PRODUCE, 9),
        (ApiKey.PRODUCE, 12),
        (ApiKey.PRODUCE, 13),
        (ApiKey.FETCH, 12),
        (ApiKey.FETCH, 16),
    }
    for key, version, answer in answered:
        name = APIS[key].response
        body = _whole_records(answer) if key == ApiKey.FETCH else answer

        def refuse(*_args: object, name: str = name, version: int = version) -> bytes:
            raise AssertionError(f"{name} v{version} went to the Python builder")

        compiled_only = _compiled.encoder(name, version, refuse)
        assert compiled_only(body) == codec.message(name, version).build(body)


def _whole_records(body: dict) -> dict:
    """A Fetch response body with its gathered records (`Chunks`) joined, as the codec takes them
    (`encode_frame` puts markers in their place, then gathers the frame around them)."""
    responses = [
        {
            **topic,
            "partitions": [
                {**p, "records": bytes(p["records"])} if type(p.get("records")) is Chunks else p
                for p in topic.get("partitions", [])
            ],
        }
        for topic in body.get("responses", [])
    ]
    return {**body, "responses": responses} if "responses" in body else body
