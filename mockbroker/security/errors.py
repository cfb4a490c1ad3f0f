"""The one exception SASL mechanisms raise when a client fails to authenticate."""

from __future__ import annotations


class AuthenticationFailed(Exception):
    """The client's credentials or messages are refused.

    `generic`: Kafka answers its standard message instead of this one (a SaslException, whose
    text may reveal whether a user exists); otherwise this message is the client's (a
    SaslAuthenticationException). `challenge`: bytes the server still sends before failing
    (OAUTHBEARER's error JSON).
    """

    def __init__(self, message: str, *, generic: bool = False, challenge: bytes | None = None):
        super().__init__(message)
        self.generic = generic
        self.challenge = challenge
