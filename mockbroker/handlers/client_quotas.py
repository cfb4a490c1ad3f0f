"""DescribeClientQuotas (48) and AlterClientQuotas (49).

Behavior: DescribeClientQuotas is answered from the broker's metadata image (Kafka's
ClientQuotasImage#describe: exact, default and "specified" matches per entity type, strict or
not); AlterClientQuotas is forwarded to the controller (`controller/client_quotas.py`), which
writes ClientQuotaRecords, and answered once the metadata has spread. Their effect, throttling,
is `broker/quotas.py`.

Version notes: v0-v1 alike (v1 is flexible).
"""

from __future__ import annotations

from typing import Any

from kipwire.codec import ApiKey

from ..controller.quota_image import describe_client_quotas
from .registry import RequestContext, handles


def _describe_fail(body: Any, code: int, version: int) -> dict:
    return {"error_code": code, "entries": None}


def _alter_fail(body: Any, code: int, version: int) -> dict:
    return {"entries": [{"error_code": code, "entity": list(e["entity"])} for e in body["entries"]]}


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, fail=_describe_fail)
async def describe_quotas(ctx: RequestContext, body: Any) -> dict:
    """The quotas of the entities the filter matches, from this broker's image."""
    return describe_client_quotas(ctx.broker.image.quotas, body)


@handles(ApiKey.ALTER_CLIENT_QUOTAS, fail=_alter_fail)
async def alter_quotas(ctx: RequestContext, body: Any) -> dict:
    """Answered by the controller."""
    return await ctx.broker.forward(ApiKey.ALTER_CLIENT_QUOTAS, ctx.api_version, body)
