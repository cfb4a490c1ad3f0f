"""Real requests of the quorum APIs for test_every_4_4_request.py, as `kafka-metadata-quorum
add-controller` / `remove-controller` and `kafka-cluster unregister-controller` send them, and
the error Kafka 4.4.0 itself answers each with on a static quorum (`ctx` is that test's Ctx:
`call`, `cluster`; tests/realkafka/test_differential_quorum_apis.py compares the answers)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from kipwire.codec import ApiKey
from kipwire.mockbroker.controller.quorum import CONTROLLER_NODE_ID

Request = Callable[[Any, int], Any]
_STATIC = "a static quorum (kraft.version 0) cannot change its voters"

#: API key -> (the error Kafka 4.4.0 answers this request with, why).
REFUSED_AS_KAFKA_DOES: dict[int, tuple[str, str]] = {
    ApiKey.ADD_RAFT_VOTER: ("UNSUPPORTED_VERSION", _STATIC),
    ApiKey.REMOVE_RAFT_VOTER: ("UNSUPPORTED_VERSION", _STATIC),
    ApiKey.UNREGISTER_CONTROLLER: (
        "CONTROLLER_ID_NOT_REGISTERED",
        "no controller but the active one is registered, and it may not unregister itself",
    ),
}


def add_raft_voter(ctx: Any, version: int) -> Any:
    """A new controller 3001 with its directory and endpoint."""
    listener = {"name": "CONTROLLER", "host": "127.0.0.1", "port": 9099}
    body = {"cluster_id": None, "timeout_ms": 30_000, "voter_id": CONTROLLER_NODE_ID + 1}
    body |= {"voter_directory_id": uuid.uuid4(), "listeners": [listener]}
    if version >= 1:
        body["ack_when_committed"] = True
    return ctx.call(ApiKey.ADD_RAFT_VOTER, version, body)


def remove_raft_voter(ctx: Any, version: int) -> Any:
    """The one voter, named by its id and directory."""
    directory = ctx.cluster.cluster.controller_node.quorum.directory_id
    body = {"cluster_id": None, "voter_id": CONTROLLER_NODE_ID, "voter_directory_id": directory}
    return ctx.call(ApiKey.REMOVE_RAFT_VOTER, version, body)


def unregister_controller(ctx: Any, version: int) -> Any:
    """A controller id next to the active one's."""
    body = {"controller_id": CONTROLLER_NODE_ID + 1}
    return ctx.call(ApiKey.UNREGISTER_CONTROLLER, version, body)


REQUESTS: dict[int, Request] = {
    ApiKey.ADD_RAFT_VOTER: add_raft_voter,
    ApiKey.REMOVE_RAFT_VOTER: remove_raft_voter,
    ApiKey.UNREGISTER_CONTROLLER: unregister_controller,
}
