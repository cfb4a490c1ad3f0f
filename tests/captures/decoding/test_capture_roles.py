"""Client and broker roles of connections seen without a handshake, decided from their bytes."""

from __future__ import annotations

from captures_testkit import request_frame, response_frame

from kipwire.captures.decoding.framing import split_frames
from kipwire.captures.decoding.roles import orient
from kipwire.captures.reading.packets import ACK, PSH, SYN, TcpSegment
from kipwire.captures.reading.reassembly import reassemble
from kipwire.codec import ApiKey

C = (bytes([10, 0, 0, 1]), 50000)
S = (bytes([10, 0, 0, 2]), 9092)


def seg(src, dst, seq, payload=b"", flags=ACK | PSH):
    return TcpSegment(
        src[0], src[1], dst[0], dst[1], seq & 0xFFFFFFFF, 0, flags, payload, len(payload)
    )


def requests(n, first_corr=1):
    return [
        request_frame(ApiKey.METADATA, 9, first_corr + i, b"b" * (((i * 37) % 50) + 1))
        for i in range(n)
    ]


def test_mid_connection_start_roles_from_kafka_requests():
    reqs = requests(3, first_corr=7)
    resps = [response_frame(7 + i) for i in range(3)]
    # the server speaks first in the capture and uses a low-numbered-looking client port
    segs = [
        (1, seg(S, C, 900, resps[0])),
        (2, seg(C, S, 400, reqs[1])),
        (3, seg(S, C, 900 + len(resps[0]), resps[1])),
    ]
    conn = orient(*reassemble(segs), broker_ports=[50000])  # a wrong hint loses to the payload
    assert conn.client == C and conn.role_source == "kafka"
    items = split_frames(conn.to_client, requests=False, expected_corr=[8])
    assert [i.kind for i in items] == ["frame", "frame"]


def test_roles_from_hint_then_port_order():
    junk = b"\xff" * 20
    segs = [(1, seg(C, S, 1, junk)), (2, seg(S, C, 1, junk))]
    conn = orient(*reassemble(segs), broker_ports=[50000])
    assert conn.server == C and conn.role_source == "port_hint"
    conn = orient(*reassemble(segs))
    assert conn.server == S and conn.role_source == "port_order"


def test_roles_from_syn_ack_alone():
    segs = [(1, seg(S, C, 1, b"", SYN | ACK)), (2, seg(C, S, 1, b"\xff" * 20))]
    conn = orient(*reassemble(segs), broker_ports=[50000])
    assert conn.server == S and conn.role_source == "syn"
