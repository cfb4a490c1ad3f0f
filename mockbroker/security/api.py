"""The cluster's security methods (`Cluster` inherits them): the CA, client certificates and
client configurations; `ClusterError` when the cluster lacks what is asked."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kipwire.codec import ApiKey, ErrorCode

from .acls import Acl, binding_from_names, filter_of
from .config import SecurityConfig
from .runtime import ClusterSecurity

#: The ACL APIs' version the test API sends (Kafka 4's range is 1-3).
ACLS_VERSION = 3


class SecurityApi:
    """TLS files and client settings of a running cluster."""

    security: ClusterSecurity | None
    bootstrap_servers: str
    controller: Any
    #: Cluster's: an admin request through a running broker, answered once brokers caught up.
    _admin: Callable[[int, int, Any], Awaitable[Any]]

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

    async def add_acl(
        self,
        principal: str,
        resource_type: str,
        resource_name: str,
        operation: str,
        pattern: str = "LITERAL",
        permission: str = "ALLOW",
        host: str = "*",
    ) -> None:
        """Add an ACL through the controller (CreateAcls); every running broker has replayed it
        when this returns. `principal` "User:alice" (or "alice"), names as Kafka spells them."""
        binding = binding_from_names(
            principal, resource_type, resource_name, operation, pattern, permission, host
        )
        response = await self._admin(
            ApiKey.CREATE_ACLS, ACLS_VERSION, {"creations": [binding.creation()]}
        )
        self._check(response["results"][0], "add_acl")

    async def remove_acl(
        self,
        principal: str,
        resource_type: str,
        resource_name: str,
        operation: str,
        pattern: str = "LITERAL",
        permission: str = "ALLOW",
        host: str = "*",
    ) -> None:
        """Remove the ACL `add_acl` with the same arguments added (DeleteAcls); every running
        broker has replayed it when this returns."""
        binding = binding_from_names(
            principal, resource_type, resource_name, operation, pattern, permission, host
        )
        response = await self._admin(
            ApiKey.DELETE_ACLS, ACLS_VERSION, {"filters": [filter_of(binding)]}
        )
        self._check(response["filter_results"][0], "remove_acl")

    def acls(self) -> list[Acl]:
        """Every ACL in the metadata log, by name, in a stable order."""
        return sorted(Acl.of(b) for b in self.controller.state.acls.values())

    def _check(self, result: Any, what: str) -> None:
        if result["error_code"]:
            from ..cluster import ClusterError

            message = result.get("error_message") or ErrorCode(result["error_code"]).name
            raise ClusterError(f"{what}: {message}")
