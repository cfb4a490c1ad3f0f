"""A cluster's security at run time: the test CA, each node's listener security, the SCRAM
credentials its users start with, and the client configurations (`ClusterSecurity`).

The cluster makes one `ClusterSecurity` when any security argument is given, and none for a
PLAINTEXT cluster, whose listeners stay exactly as they were.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import trio

from .authorizer import Authorizer
from .config import SCRAM_MECHANISMS, SecurityConfig
from .controller_authorization import ControllerAuthorization
from .listener import ListenerSecurity
from .oauth import OAuthBearerServer
from .plain import PlainServer
from .sasl import Mechanism, SaslAuthenticator
from .scram import MECHANISM_TYPES, ScramCredential, ScramServer, make_credential
from .tls import CertificateAuthority, ServerFiles
from .tokens import TokenInfo, split_principal, token_credential

if TYPE_CHECKING:
    from ..controller.state import ClusterState
    from ..controller_node import ControllerNode

#: Kafka's default connection.failed.authentication.delay.ms.
FAILED_AUTHENTICATION_DELAY_MS = 100
Credentials = Callable[[str, str], ScramCredential | None]


@dataclass(frozen=True)
class SharedSecurity:
    """A cluster's security as a node in another process takes it (process mode): the
    settings, the delegation-token key and the listeners' certificate files, never the CA."""

    config: SecurityConfig
    settings: dict[str, str]
    token_secret: bytes | None
    tls: ServerFiles | None


class ClusterSecurity:
    """The CA, listener settings and initial credentials of one secured cluster."""

    def __init__(
        self,
        config: SecurityConfig,
        settings: Mapping[str, str],
        shared: SharedSecurity | None = None,
    ) -> None:
        self.config = config
        self._settings = dict(settings)
        self.reauth_ms = int(settings.get("connections.max.reauth.ms", "0"))
        delay = settings.get("connection.failed.authentication.delay.ms")
        self.failed_delay_ms = FAILED_AUTHENTICATION_DELAY_MS if delay is None else int(delay)
        #: The CA, in the process that made it (None without TLS and in the other processes).
        self.ca = CertificateAuthority() if config.tls and shared is None else None
        self._tls = shared.tls if shared is not None else self.ca.files if self.ca else None
        #: delegation.token.secret.key: tokens authenticate over SCRAM, so SASL with SCRAM
        #: enables them (with the configured key, or one made at start-up).
        self.token_secret: bytes | None = None
        if shared is not None:
            self.token_secret = shared.token_secret
        elif config.sasl and any(m in SCRAM_MECHANISMS for m in config.mechanisms):
            key = settings.get("delegation.token.secret.key")
            self.token_secret = key.encode() if key else os.urandom(32)
        #: Wall-clock ms minus the cluster's clock (trio's, maybe a MockClock): token
        #: timestamps are wall-clock times that move with the cluster's clock.
        self.clock_offset_ms = int(time.time() * 1000) - _now_ms()
        self._context = self._tls.server_context(config.client_auth) if self._tls else None

    def shared(self) -> SharedSecurity:
        """What a node in another process needs to serve as this cluster's nodes do."""
        return SharedSecurity(self.config, self._settings, self.token_secret, self._tls)

    @classmethod
    def from_shared(cls, shared: SharedSecurity) -> ClusterSecurity:
        """The security of another process's cluster, for a node of it in this process (its
        clock offset is this process's: each trio loop has a clock of its own)."""
        return cls(shared.config, shared.settings, shared)

    def close(self) -> None:
        """Remove the CA's files."""
        if self.ca is not None:
            self.ca.close()

    def controller_settings(self) -> dict[str, Any]:
        """The controller's keyword arguments for delegation tokens."""
        return {
            "delegation_token_secret": self.token_secret,
            "wall_clock_offset_ms": self.clock_offset_ms,
        }

    def controller_api_ranges(self, release: str) -> list[dict[str, int]]:
        """What the controller listener adds to its ApiVersions: the SASL APIs with SASL, at
        the ranges Kafka `release` lists."""
        if not self.config.sasl:
            return []
        from kipwire.codec import ApiKey

        from ..handlers.releases import BROKER_VERSIONS

        return [
            {"api_key": key, "min_version": low, "max_version": high}
            for key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE)
            for low, high in [BROKER_VERSIONS[release][key]]
        ]

    def secure_controller(self, node: ControllerNode) -> ListenerSecurity:
        """Secure the controller's client listener like the brokers' (its SASL APIs in
        ApiVersions, its credentials and tokens, ControllerApis' checks with the authorizer);
        the listener security to serve it with."""
        controller = node.controller

        def state() -> ClusterState:
            return controller.state

        node.advertised_extra = self.controller_api_ranges(node.controller.semantics.release)
        if self.config.authorizer:
            authorizer = Authorizer(self.config.super_users)
            node.authorization = ControllerAuthorization(authorizer, state, self.token_secret)
        return self.listener(
            lambda user, mechanism: state().scram.get((user, MECHANISM_TYPES[mechanism])),
            lambda: state().tokens,
        )

    def bootstrap_records(self) -> list[tuple[str, dict[str, Any]]]:
        """The UserScramCredentialRecords of the configured users (a formatted cluster's
        `kafka-storage format --add-scram`), for every enabled SCRAM mechanism."""
        records = []
        for mechanism in SCRAM_MECHANISMS:
            if mechanism not in self.config.mechanisms:
                continue
            for user, password in sorted(self.config.users.items()):
                c = make_credential(mechanism, password, self.config.scram_iterations)
                records.append(
                    (
                        "UserScramCredentialRecord",
                        {
                            "name": user,
                            "mechanism": MECHANISM_TYPES[mechanism],
                            "salt": c.salt,
                            "stored_key": c.stored_key,
                            "server_key": c.server_key,
                            "iterations": c.iterations,
                        },
                    )
                )
        return records

    def listener(
        self, credentials: Credentials, tokens: Callable[[], Mapping[str, TokenInfo]]
    ) -> ListenerSecurity:
        """A node's listener security; `credentials(user, mechanism)` reads its replayed SCRAM
        credentials, `tokens()` its replayed delegation tokens."""
        authenticator = None
        if self.config.sasl:

            def authenticator() -> SaslAuthenticator:
                return SaslAuthenticator(
                    self.config.mechanisms,
                    lambda mechanism: self._mechanism(mechanism, credentials, tokens),
                    _now_ms,
                    self.reauth_ms,
                )

        return ListenerSecurity(self._context, authenticator, self.failed_delay_ms / 1000)

    def _mechanism(
        self,
        mechanism: str,
        credentials: Credentials,
        tokens: Callable[[], Mapping[str, TokenInfo]],
    ) -> Mechanism:
        if mechanism == "PLAIN":
            return PlainServer(self.config.users)
        if mechanism == "OAUTHBEARER":
            return OAuthBearerServer(_wall_ms())
        secret = self.token_secret

        def token(token_id: str) -> tuple[str, ScramCredential, int] | None:
            found = tokens().get(token_id)
            left = found.expiry_ms - _now_ms() - self.clock_offset_ms if found else 0
            if secret is None or found is None or left <= 0:
                return None
            owner = split_principal(found.owner)[1]
            return owner, token_credential(secret, token_id, mechanism), left

        return ScramServer(mechanism, lambda user: credentials(user, mechanism), tokens=token)

    def client_config(
        self,
        user: str,
        bootstrap: str,
        mechanism: str | None = None,
        library: str = "confluent-kafka",
    ) -> dict[str, Any] | str:
        """What a client library needs to connect as `user` (see `SecurityConfig`)."""
        mtls = self.ca is not None and self.config.client_auth != "none"
        cert = self.ca.client_cert(user) if mtls and self.ca is not None else None
        keystore = self.ca.keystore(user) if mtls and self.ca is not None else None
        return self.config.client_config(
            user,
            bootstrap,
            mechanism=mechanism,
            library=library,
            ca_path=self.ca.ca_path if self.ca is not None else None,
            cert=cert,
            keystore=keystore,
        )


def _now_ms() -> int:
    # session lifetimes run on the cluster's clock, so a MockClock moves them too
    return int(trio.current_time() * 1000)


def _wall_ms() -> int:
    # tokens expire in wall-clock time (an OAuth exp, a delegation token's expiry)
    return int(time.time() * 1000)
