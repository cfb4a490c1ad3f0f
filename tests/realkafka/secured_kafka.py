"""A real Kafka node with a SASL_SSL listener beside the harness's PLAINTEXT one, set up as the
mock's secured clusters are: SCRAM-SHA-512 and PLAIN, StandardAuthorizer, `User:admin` a super
user, a certificate for 127.0.0.1 from a test CA. The PLAINTEXT listener (principal ANONYMOUS,
also a super user) only creates the SCRAM users, as `kafka-storage format --add-scram` would.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import trustme
from kafka_harness import KafkaCluster, KafkaNode, free_port
from realkafka_wire import WireConnection

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import MockCluster
from kipwire.mockbroker.security.tls import pkcs8

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SUPER_USERS = ("admin",)
SCRAM_SHA_512 = 2  # the KIP-554 APIs' number for SCRAM-SHA-512


def secured_mock() -> MockCluster:
    """A one-broker mock secured as the real node is (its SASL_SSL listener, users, authorizer)."""
    return MockCluster(
        brokers=1,
        security_protocol="SASL_SSL",
        sasl_mechanisms=("SCRAM-SHA-512", "PLAIN"),
        users=USERS,
        super_users=SUPER_USERS,
        authorizer=True,
        config={"auto.create.topics.enable": "false"},
    )


@dataclass
class SecuredKafka(KafkaCluster):
    """The harness's cluster with a SASL_SSL listener on every broker (`sasl_ports`)."""

    sasl_ports: dict[int, int] = field(default_factory=dict)
    tls_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="kafka-tls-")))

    @property
    def ca_path(self) -> str:
        """The PEM CA that signed the brokers' certificate."""
        return str(self.tls_dir / "ca.pem")

    def properties(self, node: KafkaNode) -> str:
        """The harness's server.properties with the SASL_SSL listener and the authorizer."""
        text = super().properties(node)
        if not node.spec.broker:
            return text
        port = self.sasl_ports.setdefault(node.spec.node_id, free_port())
        keystore = self._keystore()
        props = dict(line.split("=", 1) for line in text.splitlines() if line)
        props["listeners"] += f",SASL_SSL://127.0.0.1:{port}"
        props["advertised.listeners"] += f",SASL_SSL://127.0.0.1:{port}"
        props["listener.security.protocol.map"] += ",SASL_SSL:SASL_SSL"
        users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
        props.update(
            {
                "sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
                "listener.name.sasl_ssl.plain.sasl.jaas.config": (
                    f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
                ),
                "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                ),
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": keystore,
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": ";".join(f"User:{u}" for u in (*SUPER_USERS, "ANONYMOUS")),
            }
        )
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def _keystore(self) -> str:
        path = self.tls_dir / "broker.pem"
        if not path.exists():
            ca = trustme.CA()
            ca.cert_pem.write_to_path(self.ca_path)
            leaf = ca.issue_cert("127.0.0.1", "localhost")
            path.write_bytes(pkcs8(leaf.private_key_pem.bytes()) + leaf.cert_chain_pems[0].bytes())
        return str(path)

    def sasl_bootstrap(self) -> str:
        """host:port of the first broker's SASL_SSL listener."""
        return f"127.0.0.1:{self.sasl_ports[min(self.sasl_ports)]}"

    def add_scram_users(self) -> None:
        """Every user's SCRAM-SHA-512 credential, through the PLAINTEXT listener."""
        host, port = self.bootstrap().split(",")[0].rsplit(":", 1)
        upsertions = []
        for user, password in USERS.items():
            salt = os.urandom(16)
            salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, 4096)
            upsertions.append(
                {
                    "name": user,
                    "mechanism": SCRAM_SHA_512,
                    "iterations": 4096,
                    "salt": salt,
                    "salted_password": salted,
                }
            )
        with WireConnection(host, int(port)) as conn:
            body = conn.call(
                ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": upsertions}
            ).body
        codes = [r["error_code"] for r in body["results"]]
        assert codes == [ErrorCode.NONE] * len(USERS), body
