"""One module per API (or tight family), each registering its handler by API key.

Handlers reach the broker through `RequestContext.broker` (a `registry.BrokerView`) only.
"""

from . import (  # noqa: F401  (imported for their registrations)
    admin,
    api_versions,
    client_quotas,
    config_resources,
    consumer_groups,
    delete_records,
    describe_cluster,
    describe_quorum,
    describe_topic_partitions,
    fetch,
    find_coordinator,
    get_replica_log_info,
    group_admin,
    groups,
    list_offsets,
    log_dirs,
    metadata,
    offset_for_leader_epoch,
    offsets,
    produce,
    share_fetch,
    share_groups,
    share_offsets,
    streams_groups,
    telemetry,
    transaction_admin,
    transactions,
)
from .registry import HANDLERS, BrokerView, Handler, RequestContext

__all__ = ["HANDLERS", "BrokerView", "Handler", "RequestContext"]
