"""The control API (mockbroker/control): each pinned endpoint answers what the Python API does,
errors are JSON with 400, 404 or 409, and the HTTP layer serves what curl, Go and Java send."""

from __future__ import annotations

import json

import pytest
import trio

from kipwire.codec import ApiKey, ErrorCode
from kipwire.mockbroker import CONTROLLER, open_cluster
from kipwire.mockbroker.control import ControlAPI, serve_control


async def _call(api: ControlAPI, method: str, path: str, body: object = None) -> tuple[int, dict]:
    reply = await api.answer(method, path, b"" if body is None else json.dumps(body).encode())
    return reply.status, reply.body


@pytest.mark.trio
async def test_the_pinned_endpoints_drive_the_cluster_as_its_methods_do():
    async with open_cluster(brokers=3) as cluster:
        api = ControlAPI(cluster)
        status, body = await _call(api, "GET", "/v1/cluster")
        assert status == 200 and [b["state"] for b in body["brokers"]] == ["running"] * 3
        assert body["controller"] == {"id": CONTROLLER, "port": cluster.controller_node.port}

        topic = {"name": "t", "partitions": 2, "replication_factor": 3, "configs": {}}
        assert await _call(api, "POST", "/v1/topics", topic) == (
            201,
            {"name": "t", "partitions": 2},
        )
        status, body = await _call(api, "POST", "/v1/topics", topic)
        assert status == 409 and "already exists" in body["error"]
        status, body = await _call(api, "GET", "/v1/topics")
        assert [(t["name"], t["partitions"]) for t in body["topics"]] == [("t", 2)]
        status, p = await _call(api, "GET", "/v1/topics/t/partitions/1")
        assert status == 200 and p == cluster.describe_partition("t", 1)
        assert sorted(p["isr"]) == [1, 2, 3] and p["high_watermark"] == 0

        leader = p["leader"]
        status, body = await _call(api, "POST", f"/v1/brokers/{leader}/stop", {"clean": False})
        assert (status, body["state"]) == (200, "stopped")
        assert cluster.controller.broker(leader).fenced  # seen fenced when the call returns
        assert (await _call(api, "POST", f"/v1/brokers/{leader}/stop"))[0] == 409
        status, p = await _call(api, "GET", "/v1/topics/t/partitions/1")
        assert p["leader"] not in (leader, -1) and leader not in p["isr"]
        status, body = await _call(api, "POST", f"/v1/brokers/{leader}/start")
        assert (status, body["state"]) == (200, "running")
        assert not cluster.controller.broker(leader).fenced
        assert (await _call(api, "POST", f"/v1/brokers/{leader}/start"))[0] == 409


@pytest.mark.trio
async def test_faults_get_ids_whose_handles_count_and_end():
    async with open_cluster(brokers=3) as cluster:
        api = ControlAPI(cluster)
        status, body = await _call(
            api,
            "POST",
            "/v1/faults/errors",
            {"api_key": "PRODUCE", "error_code": "NOT_LEADER_OR_FOLLOWER", "count": -1},
        )
        assert status == 200
        (injection,) = cluster.faults._errors
        assert (injection.api_key, injection.error_code) == (
            ApiKey.PRODUCE,
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
        )
        path = f"/v1/faults/errors/{body['id']}"
        status, state = await _call(api, "GET", path)
        assert (state["fired"], state["remaining"], state["active"]) == (0, -1, True)
        assert await _call(api, "DELETE", path) == (200, {})
        assert cluster.faults._errors == []
        assert (await _call(api, "GET", path))[1]["remaining"] == 0
        by_number = {
            "api_key": int(ApiKey.FETCH),
            "error_code": int(ErrorCode.NOT_LEADER_OR_FOLLOWER),
            "partition": {"topic": "x", "partition": 0},
        }
        status, body = await _call(api, "POST", "/v1/faults/errors", by_number)
        assert status == 200 and cluster.faults._errors[0].partition == ("x", 0)

        status, body = await _call(api, "POST", "/v1/network/partition", {"groups": [[1], [2, 3]]})
        assert status == 200
        assert cluster.network.is_cut(1, 2) and cluster.network.is_cut(1, 3)
        assert not cluster.network.is_cut(2, 3) and not cluster.network.is_cut(1, CONTROLLER)
        cut = (await _call(api, "POST", "/v1/network/cut", {"a": 2, "b": "controller"}))[1]
        assert cluster.network.is_cut(2, CONTROLLER)
        assert await _call(api, "DELETE", f"/v1/network/{cut['id']}") == (200, {})
        assert not cluster.network.is_cut(2, CONTROLLER)
        await _call(api, "POST", "/v1/network/isolate", {"node": 3})
        assert cluster.network.is_cut(3, CONTROLLER)
        assert await _call(api, "POST", "/v1/network/heal") == (200, {})
        assert not cluster.network.is_cut(1, 2) and not cluster.network.is_cut(3, CONTROLLER)

        status, body = await _call(api, "POST", "/v1/faults/latency", {"ms": 5, "broker": 2})
        assert status == 200 and cluster.faults.response_delay(2) == 0.005
        assert (await _call(api, "DELETE", f"/v1/faults/latency/{body['id']}"))[0] == 200
        assert cluster.faults.response_delay(2) == 0.0
        status, metrics = await _call(api, "GET", "/v1/metrics")
        assert status == 200 and metrics == cluster.metrics()


_PRODUCE_ERROR = {"api_key": int(ApiKey.PRODUCE), "error_code": int(ErrorCode.NOT_CONTROLLER)}


@pytest.mark.trio
@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("GET", "/v1/nowhere", None, 404),
        ("DELETE", "/v1/cluster", None, 405),
        ("POST", "/v1/brokers/9/stop", {}, 404),
        ("POST", "/v1/brokers/x/stop", {}, 400),
        ("GET", "/v1/topics/none/partitions/0", None, 404),
        ("POST", "/v1/topics", {"partitions": 1}, 400),
        ("POST", "/v1/faults/errors", {**_PRODUCE_ERROR, "api_key": "NO_SUCH_API"}, 400),
        ("POST", "/v1/faults/errors", {**_PRODUCE_ERROR, "broker": 9}, 404),
        ("POST", "/v1/faults/errors", {**_PRODUCE_ERROR, "count": "2"}, 400),
        ("POST", "/v1/network/cut", {"a": 1, "b": 7}, 404),
        ("POST", "/v1/network/cut", {"a": 1, "b": "broker"}, 400),
        ("POST", "/v1/network/partition", {"groups": [1, 2]}, 400),
        ("GET", "/v1/faults/errors/41", None, 404),
        ("DELETE", "/v1/faults/latency/41", None, 404),
    ],
)
async def test_mistakes_are_json_errors_with_their_status(method, path, body, status):
    async with open_cluster(brokers=1) as cluster:
        got, answer = await _call(ControlAPI(cluster), method, path, body)
        assert got == status and answer["error"]


async def _http(port: int, request: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        data = b""
        with trio.fail_after(10):
            while chunk := await stream.receive_some(65536):
                data += chunk
    return data


@pytest.mark.trio
async def test_the_http_layer_answers_json_and_refuses_what_it_cannot_read():
    async with open_cluster(brokers=1) as cluster, trio.open_nursery() as nursery:
        port = await nursery.start(serve_control, cluster, 0)
        body = b'{"name": "h", "partitions": 1}'
        head = b"POST /v1/topics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            # curl's way with a large body: the head alone, the body once told to go on
            await stream.send_all(
                head + b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body)
            )
            with trio.fail_after(10):
                assert await stream.receive_some(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
                await stream.send_all(body)
                answer = b""
                while chunk := await stream.receive_some(65536):
                    answer += chunk
        assert answer.startswith(b"HTTP/1.1 201 Created\r\n")
        assert answer.endswith(b'{"name": "h", "partitions": 1}\n')
        assert b"Connection: close" in answer
        chunked = await _http(
            port, b"POST /v1/topics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        )  # refused requests close the connection
        assert chunked.startswith(b"HTTP/1.1 411 ")
        assert (await _http(port, b"hello\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
        not_json = b"POST /v1/topics HTTP/1.1\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{{{"
        assert b'"error": "the body is not JSON' in await _http(port, not_json)
        # HTTP/1.1 keeps the connection for the next request (clients pool them), pipelined too
        get = b"GET /v1/topics HTTP/1.1\r\nHost: x\r\n\r\n"
        last = b"GET /v1/cluster HTTP/1.1\r\nConnection: close\r\n\r\n"
        answers = await _http(port, get + get + last)
        assert answers.count(b"HTTP/1.1 200 OK\r\n") == 3
        assert answers.count(b"Connection: keep-alive\r\n") == 2
        assert answers.endswith(b"}}\n") and b'"controller": {' in answers
        nursery.cancel_scope.cancel()
