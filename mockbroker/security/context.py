"""Who sent the request being served: the connection's authenticated principal.

Set in each client connection's task by the secured listener (`listener.py`) once TLS or SASL
has authenticated it; handlers read it to authorize a request. PLAINTEXT connections never set
it: their principal is Kafka's `User:ANONYMOUS`.
"""

from __future__ import annotations

from contextvars import ContextVar

from .tls import ANONYMOUS

PRINCIPAL: ContextVar[str] = ContextVar("kipwire_principal", default=ANONYMOUS)
