"""The cost of security on the mock: confluent-kafka producing, then consuming, 100,000 x 100 B
records on a 3-broker kipwire cluster with PLAINTEXT listeners and with SASL_SSL + SCRAM-SHA-512;
then the time a new connection takes to complete its TLS handshake and SCRAM authentication.

Each cluster runs in a subprocess (`python -m kipwire.mockbroker serve`), as in mock_bench.py.
The per-connection time is measured with the standard library's ssl module and a SCRAM client
here (no Kafka client start-up in it): TCP connect, TLS handshake, SaslHandshake and the two
SaslAuthenticate round trips. Usage: ``python benchmarks/security_bench.py [--records N]
[--size B] [--connections N]``.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import hmac
import json
import os
import ssl
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mock_bench import PARTITIONS, TIMEOUT, TOPIC

from kipwire.client import Connection
from kipwire.codec import ApiKey, ErrorCode

USER, PASSWORD = "bench", "bench-secret"


@contextmanager
def cluster(*flags: str) -> Iterator[dict[str, Any]]:
    """A 3-broker kipwire cluster in a subprocess; yields a confluent-kafka config for it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kipwire.mockbroker", "serve", "--brokers", "3", "--quiet", *flags],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip()
        config: dict[str, Any] = {"bootstrap.servers": bootstrap}
        if flags:
            proc.stdout.readline()  # the CA's path, also in the client config
            config = json.loads(proc.stdout.readline().removeprefix("client config: "))
            config["sasl.password"] = PASSWORD
        yield config
    finally:
        proc.terminate()
        proc.wait(10)


def produce(config: dict[str, Any], records: int, value: bytes) -> float:
    """Seconds to produce every record and have it acknowledged."""
    from confluent_kafka import Producer

    producer = Producer(config)
    errors: list[str] = []
    start = time.perf_counter()
    for i in range(records):
        while True:
            try:
                producer.produce(
                    TOPIC,
                    value,
                    partition=i % PARTITIONS,
                    on_delivery=lambda e, m: e and errors.append(str(e)),
                )
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(TIMEOUT) != 0 or errors:
        raise RuntimeError(f"the producer did not deliver everything: {errors[:1]}")
    return time.perf_counter() - start


def consume(config: dict[str, Any], records: int) -> float:
    """Seconds from the first record received to the last, reading every partition from 0."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**config, "group.id": "bench", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    seen, start = 0, None
    deadline = time.perf_counter() + TIMEOUT
    while seen < records and time.perf_counter() < deadline:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                start = start or time.perf_counter()
                seen += 1
    consumer.close()
    if seen != records:
        raise RuntimeError(f"consumed {seen} of {records} records")
    return time.perf_counter() - (start or 0.0)


def connect_and_authenticate(address: str, ca: str) -> float:
    """Seconds for one connection's TCP connect, TLS handshake and SCRAM-SHA-512 login."""
    start = time.perf_counter()
    conn = Connection(address, client_id="bench", timeout=10)
    context = ssl.create_default_context(cafile=ca)
    conn.socket = context.wrap_socket(conn.socket, server_hostname="127.0.0.1")
    try:
        conn.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
        nonce = base64.b64encode(os.urandom(18)).decode()
        bare = f"n={USER},r={nonce}"
        first = conn.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"n,,{bare}".encode()})
        server_first = bytes(first["auth_bytes"]).decode()
        attrs = dict(p.split("=", 1) for p in server_first.split(","))
        salted = hashlib.pbkdf2_hmac(
            "sha512", PASSWORD.encode(), base64.b64decode(attrs["s"]), int(attrs["i"])
        )
        client_key = hmac.digest(salted, b"Client Key", "sha512")
        without_proof = f"c=biws,r={attrs['r']}"
        message = f"{bare},{server_first},{without_proof}".encode()
        signature = hmac.digest(hashlib.sha512(client_key).digest(), message, "sha512")
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True)))
        final = conn.call(
            ApiKey.SASL_AUTHENTICATE,
            2,
            {"auth_bytes": f"{without_proof},p={proof.decode()}".encode()},
        )
        if final["error_code"] != ErrorCode.NONE:
            raise RuntimeError(final["error_message"])
        return time.perf_counter() - start
    finally:
        conn.close()


def main() -> None:
    """Both protocols' rates and their ratio, then the per-connection authentication time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--connections", type=int, default=50)
    args = parser.parse_args()
    value = b"x" * args.size
    secured = (
        "--security-protocol", "SASL_SSL", "--sasl-mechanism", "SCRAM-SHA-512",
        "--user", f"{USER}:{PASSWORD}", "--super-user", USER,
    )  # fmt: skip
    rates = {}
    for name, flags in (("PLAINTEXT", ()), ("SASL_SSL+SCRAM", secured)):
        with cluster(*flags) as config:
            from confluent_kafka.admin import AdminClient, NewTopic

            admin = AdminClient(config)  # kept: a dropped client cancels its requests
            for future in admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)]).values():
                future.result(30)
            produce(config, PARTITIONS, value)  # start-up costs are not timed
            produced = args.records / produce(config, args.records, value)
            consumed = args.records / consume(config, args.records + PARTITIONS)
            rates[name] = (produced, consumed)
            print(f"{name:16} produce {produced:>10,.0f} msg/s   consume {consumed:>10,.0f} msg/s")
            if flags:
                address = config["bootstrap.servers"].split(",")[0]
                times = [
                    connect_and_authenticate(address, config["ssl.ca.location"])
                    for _ in range(args.connections)
                ]
                median = statistics.median(times) * 1000
                p90 = statistics.quantiles(times, n=10)[-1] * 1000
                print(
                    f"{'TLS + SCRAM':16} per connection: median {median:.1f} ms, p90 {p90:.1f} "
                    f"ms ({args.connections} connections, SCRAM-SHA-512, 4096 iterations)"
                )
    plain, secure = rates["PLAINTEXT"], rates["SASL_SSL+SCRAM"]
    print(
        f"{'SASL_SSL / PLAIN':16} produce {secure[0] / plain[0]:>10.2f}x        "
        f"consume {secure[1] / plain[1]:>10.2f}x"
    )


if __name__ == "__main__":
    main()
