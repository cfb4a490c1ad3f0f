"""The rewrite rules: what a real client would learn anew from the target, and nothing else.

Each rule is one small function over a decoded request body (a `rewrite_*`, applied before the
request is sent) or over a pair of responses, the captured one and the target's (a `learn_*`,
applied when the target answers). What they learn is kept in `Learned`: value maps from the
original cluster's ids to the target's. Record contents, keys, headers and timestamps are never
touched; a record batch is rewritten only for its producer id and epoch, which sit in its header,
and its CRC is computed again then. Correlation ids are renumbered by the client connection
(`kipwire.client`, `send_frame`), and which broker a request goes to is `routing`'s.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import crc32c

from kipwire.codec import ApiKey

from ..comparing.rules import IGNORE, Rules

__all__ = [
    "COMPARE_RULES",
    "Learned",
    "REWRITES",
    "learn",
    "learn_fetch_session",
    "learn_members",
    "learn_producer",
    "learn_topic_ids",
    "rewrite",
    "rewrite_fetch_session",
    "rewrite_members",
    "rewrite_producer",
    "rewrite_record_batches",
    "rewrite_topic_ids",
]

#: The request fields the rules rewrite, left out when the compare reads the two sides: they
#: differ by construction (a producer id 0 the capture had is no "none" to compare with).
COMPARE_RULES = Rules(
    tuple(
        (name, IGNORE)
        for name in ("*producer_id", "*producer_epoch", "session_id", "session_epoch")
    )
)
_ZERO_UUID = UUID(int=0)
# v2 record batch header: where the CRC-32C, its covered range, producer id and epoch sit
_BATCH_LENGTH = struct.Struct(">q i")
_MAGIC_AT, _CRC_AT, _ATTRIBUTES_AT = 16, 17, 21
_PRODUCER = struct.Struct(">qh")
_PRODUCER_AT = 43
_BATCH_HEADER = 61
_PRODUCER_PREFIXES = ("", "v3_and_below_")
_GENERATIONS = ("generation_id", "generation_id_or_member_epoch", "member_epoch")


@dataclass(slots=True)
class Learned:
    """Original ids and the target's for them, learned as the replay goes."""

    #: topic id -> name, from the capture's own responses (Metadata, CreateTopics)
    original_topics: dict[UUID, str] = field(default_factory=dict)
    #: topic name -> id on the target
    target_topics: dict[str, UUID] = field(default_factory=dict)
    producer_ids: dict[int, int] = field(default_factory=dict)
    #: (original producer id, original epoch) -> target epoch
    producer_epochs: dict[tuple[int, int], int] = field(default_factory=dict)
    member_ids: dict[str, str] = field(default_factory=dict)
    #: (group, original member id, original generation or member epoch) -> the target's
    generations: dict[tuple[str, str, int], int] = field(default_factory=dict)
    fetch_sessions: dict[int, int] = field(default_factory=dict)

    def target_topic_id(self, original: UUID) -> UUID | None:
        """The target's id of the topic the capture named by `original`, None when not known."""
        name = self.original_topics.get(original)
        return None if name is None else self.target_topics.get(name)


def _dicts(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping in a decoded body, the body itself first."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            yield node
            stack.extend(v for v in node.values() if isinstance(v, (Mapping, list)))
        elif isinstance(node, list):
            stack.extend(v for v in node if isinstance(v, (Mapping, list)))


# ---------------------------------------------------------------------------------------------
# requests, before they are sent


def rewrite_topic_ids(body: Any, learned: Learned) -> None:
    """Topic ids (Fetch v13+, Produce v13+, Metadata, DeleteTopics by id) to the target's ids."""
    for node in _dicts(body):
        tid = node.get("topic_id")
        if isinstance(tid, UUID) and tid != _ZERO_UUID:
            new = learned.target_topic_id(tid)
            if new is not None:
                node["topic_id"] = new  # type: ignore[index]


def rewrite_producer(body: Any, learned: Learned) -> None:
    """Producer ids and epochs (transactions, InitProducerId re-initialising) to the target's,
    AddPartitionsToTxn v0-v3's `v3_and_below_` fields included."""
    for node in _dicts(body):
        for prefix in _PRODUCER_PREFIXES:
            pid = node.get(f"{prefix}producer_id")
            if not isinstance(pid, int) or pid < 0 or pid not in learned.producer_ids:
                continue
            epoch = node.get(f"{prefix}producer_epoch")
            if isinstance(epoch, int) and (pid, epoch) in learned.producer_epochs:
                new_epoch = learned.producer_epochs[(pid, epoch)]
                node[f"{prefix}producer_epoch"] = new_epoch  # type: ignore[index]
            node[f"{prefix}producer_id"] = learned.producer_ids[pid]  # type: ignore[index]


def rewrite_record_batches(records: bytes, learned: Learned) -> bytes:
    """Producer id and epoch in each v2 batch header to the target's, the CRC-32C recomputed
    (it covers the header from the attributes on); keys, values, headers and times unchanged."""
    out = bytearray(records)
    pos, changed = 0, False
    while pos + _BATCH_HEADER <= len(out):
        length = _BATCH_LENGTH.unpack_from(out, pos)[1]
        end = pos + 12 + length
        if length < 0 or end > len(out) or out[pos + _MAGIC_AT] != 2:
            break
        pid, epoch = _PRODUCER.unpack_from(out, pos + _PRODUCER_AT)
        if pid >= 0 and pid in learned.producer_ids:
            new_epoch = learned.producer_epochs.get((pid, epoch), epoch)
            _PRODUCER.pack_into(out, pos + _PRODUCER_AT, learned.producer_ids[pid], new_epoch)
            crc = crc32c.crc32c(bytes(out[pos + _ATTRIBUTES_AT : end]))
            struct.pack_into(">I", out, pos + _CRC_AT, crc)
            changed = True
        pos = end
    return bytes(out) if changed else records


def _rewrite_produce_records(body: Any, learned: Learned) -> None:
    for topic in body.get("topic_data") or ():
        for part in topic.get("partition_data") or ():
            if part.get("records"):
                part["records"] = rewrite_record_batches(part["records"], learned)


def rewrite_members(body: Any, learned: Learned) -> None:
    """Group member ids and generations (member epochs, KIP-848) to the ones the target gave."""
    group = body.get("group_id") if isinstance(body, Mapping) else None
    for node in _dicts(body):
        member = node.get("member_id")
        for name in _GENERATIONS:
            gen = node.get(name)
            key = (group or "", member or "", gen)
            if isinstance(gen, int) and key in learned.generations:
                node[name] = learned.generations[key]  # type: ignore[index]
        if isinstance(member, str) and member in learned.member_ids:
            node["member_id"] = learned.member_ids[member]  # type: ignore[index]


def rewrite_fetch_session(body: Any, learned: Learned) -> None:
    """A Fetch's session id to the target's; after an answer without a session (id 0) the next
    Fetch asks for a new one with a full fetch (epoch 0), as a client does."""
    sid = body.get("session_id")
    if not isinstance(sid, int) or sid == 0 or sid not in learned.fetch_sessions:
        return
    new = learned.fetch_sessions[sid]
    body["session_id"] = new
    if new == 0:
        body["session_epoch"] = 0


# ---------------------------------------------------------------------------------------------
# responses: the capture's and the target's, side by side


def learn_topic_ids(
    response: Any, into: dict[str, UUID] | dict[UUID, str], *, by_name: bool
) -> None:
    """Topic ids and names a response names (Metadata, CreateTopics, DescribeTopicPartitions):
    name -> id when `by_name`, else id -> name."""
    for node in _dicts(response):
        tid, name = node.get("topic_id"), node.get("name")
        if isinstance(tid, UUID) and tid != _ZERO_UUID and isinstance(name, str):
            if by_name:
                into[name] = tid  # type: ignore[index]
            else:
                into[tid] = name  # type: ignore[index]


def learn_producer(original: Any, target: Any, learned: Learned) -> None:
    """InitProducerId and EndTxn v5+ (KIP-890 bumps the epoch): the target's producer id and
    epoch for the captured ones."""
    pid, epoch = original.get("producer_id"), original.get("producer_epoch")
    if isinstance(pid, int) and pid >= 0 and target.get("producer_id", -1) >= 0:
        learned.producer_ids[pid] = target["producer_id"]
        learned.producer_epochs[(pid, epoch)] = target["producer_epoch"]


def learn_members(request: Any, original: Any, target: Any, learned: Learned) -> None:
    """JoinGroup and ConsumerGroupHeartbeat: the member id and generation (or member epoch) the
    target gave for the captured ones; MEMBER_ID_REQUIRED answers carry an id too."""
    member, new_member = original.get("member_id"), target.get("member_id")
    if isinstance(member, str) and member and isinstance(new_member, str) and new_member:
        learned.member_ids[member] = new_member
    group = request.get("group_id") or ""
    for name in ("generation_id", "member_epoch"):
        gen, new_gen = original.get(name), target.get(name)
        if isinstance(gen, int) and gen >= 0 and isinstance(new_gen, int) and new_gen >= 0:
            learned.generations[(group, member or "", gen)] = new_gen
    leader, new_leader = original.get("leader"), target.get("leader")
    if member == leader and isinstance(leader, str) and leader and new_leader == new_member:
        learned.member_ids[leader] = new_leader


def learn_fetch_session(original: Any, target: Any, learned: Learned) -> None:
    """Fetch: the target's session id for the captured one (0 when it opened none)."""
    sid = original.get("session_id")
    if isinstance(sid, int) and sid != 0:
        learned.fetch_sessions[sid] = target.get("session_id", 0)


# ---------------------------------------------------------------------------------------------
# the rules together

#: The request rules in the order they run; Produce batches come after the producer ids.
REWRITES: tuple[Callable[[Any, Learned], None], ...] = (
    rewrite_topic_ids,
    rewrite_producer,
    rewrite_members,
)


def rewrite(api_key: int, body: Any, learned: Learned) -> None:
    """Apply every request rule to `body`, in place."""
    for rule in REWRITES:
        rule(body, learned)
    if api_key == ApiKey.PRODUCE:
        _rewrite_produce_records(body, learned)
    elif api_key == ApiKey.FETCH:
        rewrite_fetch_session(body, learned)


_TOPIC_ANSWERS = frozenset(
    {ApiKey.METADATA, ApiKey.CREATE_TOPICS, ApiKey.DESCRIBE_TOPIC_PARTITIONS}
)


def learn(api_key: int, request: Any, original: Any, target: Any, learned: Learned) -> None:
    """What the target's answer teaches, against the captured answer to the same request."""
    if api_key in _TOPIC_ANSWERS:
        learn_topic_ids(target, learned.target_topics, by_name=True)
    if original is None:
        return
    if api_key in (ApiKey.INIT_PRODUCER_ID, ApiKey.END_TXN):
        learn_producer(original, target, learned)
    elif api_key in (ApiKey.JOIN_GROUP, ApiKey.CONSUMER_GROUP_HEARTBEAT):
        learn_members(request, original, target, learned)
    elif api_key == ApiKey.FETCH:
        learn_fetch_session(original, target, learned)
