"""A cluster's security settings (`SecurityConfig`) and the client configurations they imply.

`SecurityConfig` is what `MockCluster(security_protocol=..., sasl_mechanisms=..., users=...,
super_users=..., authorizer=..., ssl_client_auth=...)` pass on; `client_config` writes the
settings one client library needs to connect as a user (confluent-kafka, kafka-python,
aiokafka, or Java's properties text for `--command-config`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .tls import CLIENT_AUTH

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
LIBRARIES = ("confluent-kafka", "kafka-python", "aiokafka", "java")
#: Kafka's default (and the minimum it accepts) for SCRAM iterations.
DEFAULT_SCRAM_ITERATIONS = 4096
_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}


def principal(name: str) -> str:
    """A user name as a principal: `alice` -> `User:alice` (a `Type:name` stays as it is)."""
    return name if ":" in name else f"User:{name}"


@dataclass(frozen=True)
class SecurityConfig:
    """The listeners' security protocol, SASL mechanisms, users and authorizer settings."""

    protocol: str = "PLAINTEXT"
    mechanisms: tuple[str, ...] = ("SCRAM-SHA-512",)
    users: Mapping[str, str] = field(default_factory=dict)
    super_users: tuple[str, ...] = ()
    authorizer: bool = False
    client_auth: str = "none"
    scram_iterations: int = DEFAULT_SCRAM_ITERATIONS

    @classmethod
    def from_arguments(
        cls,
        security_protocol: str = "PLAINTEXT",
        sasl_mechanisms: Iterable[str] | str | None = None,
        users: Mapping[str, str] | None = None,
        super_users: Iterable[str] | str = (),
        authorizer: bool = False,
        ssl_client_auth: str = "none",
        scram_iterations: int = DEFAULT_SCRAM_ITERATIONS,
    ) -> SecurityConfig:
        """Checked settings from the cluster's keyword arguments; ValueError says what is wrong."""
        protocol = security_protocol.upper()
        if protocol not in PROTOCOLS:
            raise ValueError(f"security_protocol must be one of {PROTOCOLS}, got {protocol!r}")
        if isinstance(sasl_mechanisms, str):
            sasl_mechanisms = (sasl_mechanisms,)
        mechanisms = tuple(m.upper() for m in sasl_mechanisms or ("SCRAM-SHA-512",))
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown or not mechanisms:
            raise ValueError(f"sasl_mechanisms must be some of {MECHANISMS}, got {mechanisms}")
        if ssl_client_auth not in CLIENT_AUTH:
            raise ValueError(f"ssl_client_auth must be one of {CLIENT_AUTH}")
        if ssl_client_auth != "none" and not protocol.endswith("SSL"):
            raise ValueError(f"ssl_client_auth={ssl_client_auth!r} needs an SSL protocol")
        if scram_iterations < DEFAULT_SCRAM_ITERATIONS:
            raise ValueError(f"scram_iterations must be at least {DEFAULT_SCRAM_ITERATIONS}")
        users = dict(users or {})
        if any(not name for name in users):
            raise ValueError("a user name cannot be empty")
        if isinstance(super_users, str):
            super_users = (super_users,)
        return cls(
            protocol,
            mechanisms,
            users,
            tuple(principal(u) for u in super_users),
            bool(authorizer),
            ssl_client_auth,
            scram_iterations,
        )

    @property
    def secured(self) -> bool:
        """Whether anything differs from a plain PLAINTEXT cluster."""
        return self.protocol != "PLAINTEXT" or self.authorizer

    @property
    def tls(self) -> bool:
        """Whether the client-facing listeners speak TLS."""
        return self.protocol.endswith("SSL")

    @property
    def sasl(self) -> bool:
        """Whether clients authenticate with SASL."""
        return self.protocol.startswith("SASL")

    def client_config(
        self,
        user: str,
        bootstrap: str,
        *,
        mechanism: str | None = None,
        library: str = "confluent-kafka",
        ca_path: str | None = None,
        cert: tuple[str, str] | None = None,
        keystore: str | None = None,
    ) -> dict[str, Any] | str:
        """What `library` needs to connect as `user`: a dict, or for "java" a properties text."""
        if library not in LIBRARIES:
            raise ValueError(f"library must be one of {LIBRARIES}, got {library!r}")
        mechanism = (mechanism or self.mechanisms[0]).upper()
        if self.sasl and mechanism not in self.mechanisms:
            raise ValueError(f"{mechanism} is not enabled (enabled: {', '.join(self.mechanisms)})")
        password = self.users.get(user)
        if self.sasl and mechanism != "OAUTHBEARER" and password is None:
            raise ValueError(f"no user {user!r} (users: {', '.join(sorted(self.users))})")
        sasl = (mechanism, user, password or "") if self.sasl else None
        if library == "confluent-kafka":
            return _librdkafka(self.protocol, bootstrap, sasl, ca_path, cert)
        if library == "kafka-python":
            return _kafka_python(self.protocol, bootstrap, sasl, ca_path, cert)
        if library == "aiokafka":
            return _aiokafka(self.protocol, bootstrap, sasl, ca_path, cert)
        return _java(self.protocol, bootstrap, sasl, ca_path, keystore)


Sasl = tuple[str, str, str] | None


def _librdkafka(
    protocol: str, bootstrap: str, sasl: Sasl, ca: str | None, cert: tuple[str, str] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"bootstrap.servers": bootstrap, "security.protocol": protocol}
    if sasl is not None:
        mechanism, user, password = sasl
        out["sasl.mechanism"] = mechanism
        if mechanism == "OAUTHBEARER":
            # librdkafka builds the unsecured JWT itself, as Kafka's unsecured login module does
            out["enable.sasl.oauthbearer.unsecure.jwt"] = True
            out["sasl.oauthbearer.config"] = f"principal={user}"
        else:
            out["sasl.username"], out["sasl.password"] = user, password
    if ca is not None:
        out["ssl.ca.location"] = ca
    if cert is not None:
        out["ssl.certificate.location"], out["ssl.key.location"] = cert
    return out


def _python_sasl(out: dict[str, Any], sasl: Sasl, token_provider: str) -> None:
    """kafka-python's and aiokafka's SASL settings, which share their names."""
    if sasl is None:
        return
    mechanism, user, password = sasl
    out["sasl_mechanism"] = mechanism
    if mechanism == "OAUTHBEARER":
        from . import oauth  # only OAUTHBEARER clients need its token providers

        out["sasl_oauth_token_provider"] = getattr(oauth, token_provider)(user)
    else:
        out["sasl_plain_username"], out["sasl_plain_password"] = user, password


def _kafka_python(
    protocol: str, bootstrap: str, sasl: Sasl, ca: str | None, cert: tuple[str, str] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"bootstrap_servers": bootstrap, "security_protocol": protocol}
    _python_sasl(out, sasl, "kafka_python_token_provider")
    if ca is not None:
        out["ssl_cafile"] = ca
        out["ssl_check_hostname"] = True
    if cert is not None:
        out["ssl_certfile"], out["ssl_keyfile"] = cert
    return out


def _aiokafka(
    protocol: str, bootstrap: str, sasl: Sasl, ca: str | None, cert: tuple[str, str] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {"bootstrap_servers": bootstrap, "security_protocol": protocol}
    _python_sasl(out, sasl, "aiokafka_token_provider")
    if ca is not None:
        import ssl

        context = ssl.create_default_context(cafile=ca)
        if cert is not None:
            context.load_cert_chain(*cert)
        out["ssl_context"] = context
    return out


def _java(protocol: str, bootstrap: str, sasl: Sasl, ca: str | None, keystore: str | None) -> str:
    lines = [f"bootstrap.servers={bootstrap}", f"security.protocol={protocol}"]
    if sasl is not None:
        mechanism, user, password = sasl
        module = _JAAS_MODULES[mechanism]
        if mechanism == "OAUTHBEARER":
            options = f'unsecuredLoginStringClaim_sub="{user}"'
        else:
            options = f'username="{_jaas_quote(user)}" password="{_jaas_quote(password)}"'
        lines += [f"sasl.mechanism={mechanism}", f"sasl.jaas.config={module} required {options};"]
    if ca is not None:
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={ca}"]
    if keystore is not None:
        lines += ["ssl.keystore.type=PEM", f"ssl.keystore.location={keystore}"]
    return "\n".join(lines) + "\n"


def _jaas_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
