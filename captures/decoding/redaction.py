"""Secrets kipwire's recorder hid: a SASL token whose secret part is all `*` bytes.

A secured mock cluster records SaslAuthenticate requests with the PLAIN password, the
OAUTHBEARER token or the SCRAM client proof replaced by `*` bytes of the same length
(`kipwire.mockbroker.security.redaction`). The decoded row says so (`redacted`), so a reader
knows the exchange cannot be replayed as captured. A real secret made only of `*` would be taken
for a redacted one: the pattern is the recorder's, not a proof.
"""

from __future__ import annotations

import re

_OAUTH = re.compile(rb"auth=Bearer \*+(?:\x01|$)")
_SCRAM_PROOF = re.compile(rb"(?:^|,)p=\*+$")


def is_redacted_token(token: bytes) -> bool:
    """Whether a SASL token's secret (PLAIN password, OAUTHBEARER token, SCRAM proof) is `*`s."""
    parts = token.split(b"\0")
    if len(parts) == 3 and parts[2] and not parts[2].strip(b"*"):
        return True
    return bool(_OAUTH.search(token) or _SCRAM_PROOF.search(token))
