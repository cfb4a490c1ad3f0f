"""ApiVersions negotiation, sans-I/O: what to ask, when to ask again (KIP-511), and the highest
version of each API that both the peer and kipwire's codec speak."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata

from kipwire.codec import APIS, ApiKey, ErrorCode, Response

from ._core import api_name
from ._errors import ClientError, NoCommonVersionError

__all__ = ["PeerVersions", "api_versions_request", "retry_version"]


def _software_version() -> str:
    try:
        return metadata.version("kipwire")
    except metadata.PackageNotFoundError:
        return "0"


def codec_range(api_key: int) -> tuple[int, int] | None:
    """The (oldest, newest) version of an API that kipwire's codec encodes, None if unknown."""
    api = APIS.get(api_key)
    return None if api is None else api.versions


def api_versions_request() -> tuple[int, dict]:
    """The ApiVersions version to ask first (the codec's newest) and its body (KIP-511 names)."""
    versions = codec_range(ApiKey.API_VERSIONS)
    assert versions is not None
    body = {"client_software_name": "kipwire", "client_software_version": _software_version()}
    return versions[1], body


def retry_version(response: Response) -> int | None:
    """KIP-511: a peer too old for the version asked answers UNSUPPORTED_VERSION in v0 with its own
    ApiVersions range; the newest version of it the codec speaks, or None if no retry is due."""
    if response.body["error_code"] != ErrorCode.UNSUPPORTED_VERSION:
        return None
    ours = codec_range(ApiKey.API_VERSIONS)
    assert ours is not None
    for entry in response.body["api_keys"]:
        if entry["api_key"] == ApiKey.API_VERSIONS:
            newest = min(entry["max_version"], ours[1])
            if newest >= max(entry["min_version"], ours[0]):
                return newest
    raise NoCommonVersionError("the peer lists no ApiVersions version that kipwire speaks")


@dataclass(frozen=True, slots=True)
class PeerVersions:
    """The version ranges a peer advertised, by API key, matched against the codec's."""

    ranges: Mapping[int, tuple[int, int]]

    @classmethod
    def from_response(cls, response: Response) -> PeerVersions:
        """The ranges of an ApiVersions answer; ClientError if it carries an error code."""
        code = response.body["error_code"]
        if code != ErrorCode.NONE:
            raise ClientError(f"ApiVersions answered {ErrorCode(code).name}")
        return cls(
            {
                entry["api_key"]: (entry["min_version"], entry["max_version"])
                for entry in response.body["api_keys"]
            }
        )

    def highest(self, api_key: int, *, at_most: int | None = None) -> int:
        """The newest version of `api_key` both sides speak (no newer than `at_most`)."""
        theirs, ours = self.ranges.get(api_key), codec_range(api_key)
        if theirs is not None and ours is not None:
            newest = min(theirs[1], ours[1], at_most if at_most is not None else ours[1])
            if newest >= max(theirs[0], ours[0]):
                return newest
        raise NoCommonVersionError(
            f"{api_name(api_key)}: the peer serves {theirs or 'no version'}, kipwire's codec "
            f"{ours or 'no version'}"
            + (f", at most v{at_most} wanted" if at_most is not None else "")
        )

    def supports(self, api_key: int, version: int) -> bool:
        """Whether the peer advertised `version` of `api_key`."""
        theirs = self.ranges.get(api_key)
        return theirs is not None and theirs[0] <= version <= theirs[1]
