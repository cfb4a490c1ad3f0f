"""The cluster's security methods (`Cluster` inherits them): the CA, client certificates and
client configurations; `ClusterError` when the cluster lacks what is asked."""

from __future__ import annotations

from typing import Any

from .config import SecurityConfig
from .runtime import ClusterSecurity


class SecurityApi:
    """TLS files and client settings of a running cluster."""

    security: ClusterSecurity | None
    bootstrap_servers: str

    def _secured(self) -> ClusterSecurity:
        if self.security is None:
            from ..cluster import ClusterError

            raise ClusterError("the cluster is PLAINTEXT: no security settings were given")
        return self.security

    @property
    def ssl_ca_location(self) -> str | None:
        """Path of the PEM CA that signed the listeners' certificates (None without TLS)."""
        ca = self.security.ca if self.security is not None else None
        return ca.ca_path if ca is not None else None

    def client_cert(self, user: str) -> tuple[str, str]:
        """(certificate path, key path) of an mTLS client certificate
        `CN=<user>,OU=mock,O=kipwire`, signed by the cluster's CA."""
        ca = self._secured().ca
        if ca is None:
            from ..cluster import ClusterError

            raise ClusterError("the cluster's listeners do not use TLS")
        return ca.client_cert(user)

    def client_config(
        self, user: str, mechanism: str | None = None, library: str = "confluent-kafka"
    ) -> dict[str, Any] | str:
        """Connection settings for `user` in `library` ("confluent-kafka", "kafka-python",
        "aiokafka": a dict; "java": a properties text), mechanism the first enabled one."""
        if self.security is None:
            return SecurityConfig().client_config(
                user, self.bootstrap_servers, mechanism=mechanism, library=library
            )
        return self.security.client_config(user, self.bootstrap_servers, mechanism, library)
