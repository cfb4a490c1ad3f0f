"""ApiVersions negotiation, sans-I/O: the ranges both sides speak, and KIP-511's retry."""

from __future__ import annotations

import pytest

from kipwire.client import (
    ClientError,
    NoCommonVersionError,
    PeerVersions,
    api_versions_request,
    retry_version,
)
from kipwire.codec import APIS, ApiKey, ErrorCode, Response


def _response(error: int, api_keys: list[tuple[int, int, int]]) -> Response:
    listed = [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in api_keys]
    body = {"error_code": error, "api_keys": listed}
    return Response(ApiKey.API_VERSIONS, 0, 1, {}, body, 0)


def test_the_first_request_asks_the_codecs_newest_version_and_names_kipwire():
    version, body = api_versions_request()
    assert version == APIS[ApiKey.API_VERSIONS].versions[1]
    assert body["client_software_name"] == "kipwire"


def test_the_highest_common_version_is_bounded_by_both_sides_and_the_caller():
    ours = APIS[ApiKey.METADATA].versions
    peer = PeerVersions.from_response(
        _response(ErrorCode.NONE, [(ApiKey.METADATA, 0, ours[1] + 5), (ApiKey.FETCH, 4, 4)])
    )
    assert peer.highest(ApiKey.METADATA) == ours[1]
    assert peer.highest(ApiKey.METADATA, at_most=9) == 9
    assert peer.highest(ApiKey.FETCH) == 4
    assert peer.supports(ApiKey.FETCH, 4) and not peer.supports(ApiKey.FETCH, 5)
    with pytest.raises(NoCommonVersionError, match="FETCH"):
        peer.highest(ApiKey.FETCH, at_most=3)
    with pytest.raises(NoCommonVersionError, match="PRODUCE: the peer serves no version"):
        peer.highest(ApiKey.PRODUCE)


def test_an_error_answer_is_not_taken_for_ranges():
    with pytest.raises(ClientError, match="CLUSTER_AUTHORIZATION_FAILED"):
        PeerVersions.from_response(_response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, []))


def test_kip_511_retries_within_the_range_the_peer_lists():
    assert retry_version(_response(ErrorCode.NONE, [(ApiKey.API_VERSIONS, 0, 3)])) is None
    older = _response(ErrorCode.UNSUPPORTED_VERSION, [(ApiKey.API_VERSIONS, 0, 2)])
    assert retry_version(older) == 2
    newer = _response(ErrorCode.UNSUPPORTED_VERSION, [(ApiKey.API_VERSIONS, 0, 99)])
    assert retry_version(newer) == APIS[ApiKey.API_VERSIONS].versions[1]
    with pytest.raises(NoCommonVersionError):
        retry_version(_response(ErrorCode.UNSUPPORTED_VERSION, []))
