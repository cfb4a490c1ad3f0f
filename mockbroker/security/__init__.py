"""Security on the mock cluster: TLS listeners, SASL authentication, ACLs (issue 21).

Where things are:

- `config.py`: `SecurityConfig` (protocol, mechanisms, users, super users, authorizer) and the
  client configurations per library; `runtime.py`: `ClusterSecurity`, what a running cluster
  keeps (the CA, each node's listener security, the users' initial SCRAM credentials).
- `tls.py`: the test CA, server context, client certificates, the principal of a certificate.
- `listener.py`: a secured connection: TLS handshake, then the `SaslGate` before the pipeline.
- `sasl.py`: Kafka's SaslServerAuthenticator states (sans-I/O); the mechanisms: `plain.py`,
  `scram.py` (RFC 5802/7677, credentials as Kafka stores them), `oauth.py` (unsecured JWS).
- `image.py`: SCRAM credentials and ACLs as the metadata log's records rebuild them.
- `context.py`: `PRINCIPAL`, the authenticated principal of the request being served.
"""

from .config import MECHANISMS, PROTOCOLS, SecurityConfig

__all__ = ["MECHANISMS", "PROTOCOLS", "SecurityConfig"]
