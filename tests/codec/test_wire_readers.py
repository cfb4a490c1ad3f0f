"""codec._wire: what its length checks say (an array count is elements, not bytes)."""

from __future__ import annotations

import pytest

from kipwire import codec
from kipwire.codec import _wire


def test_an_array_count_is_elements() -> None:
    with pytest.raises(codec.DecodeError, match="array claims 9 elements but only 2 bytes remain"):
        _wire.read_array_length(b"\x00\x00\x00\x09ab", 0, False)
    with pytest.raises(codec.DecodeError, match="array claims 9 elements but only 2 bytes remain"):
        _wire.read_compact_array_length(b"\x0aab", 0, False)
    # through a generated codec: MetadataResponse v1's brokers claiming 2^31 - 1 entries
    with pytest.raises(codec.DecodeError, match="claims 2147483647 elements but only 21 bytes"):
        codec.message("MetadataResponse", 1).parse(b"\x7f\xff\xff\xff" + bytes(21))


def test_a_length_is_bytes() -> None:
    with pytest.raises(codec.DecodeError, match="string claims 5 bytes but only 3 bytes remain"):
        _wire.read_string(b"\x00\x05abc", 0)
    with pytest.raises(codec.DecodeError, match="bytes claims 4 bytes but only 1 bytes remain"):
        _wire.read_bytes(b"\x00\x00\x00\x04a", 0)


@pytest.mark.parametrize(
    ("data", "max_bytes", "message"),
    [
        (b"\x80", 5, "data ends inside a varint"),
        (b"\xff\xff\xff\xff\x1f", 5, "varint 8589934591 does not fit in 32 bits"),
        (b"\x80" * 5 + b"\x01", 5, "varint is longer than 5 bytes"),
        (b"\x80" * 10 + b"\x01", 10, "varint is longer than 10 bytes"),
    ],
)
def test_the_varint_reader_refuses(data: bytes, max_bytes: int, message: str) -> None:
    with pytest.raises(codec.DecodeError, match=message) as e:
        _wire.read_uvarint(b"z" + data, 1, max_bytes)
    assert e.value.offset == 1


def test_the_varint_reader_reads() -> None:
    assert _wire.read_uvarint(b"\x05", 0) == (5, 1)
    assert _wire.read_uvarint(b"\xac\x02", 0) == (300, 2)
    assert _wire.read_uvarint(b"\xff\xff\xff\xff\x0f", 0) == (2**32 - 1, 5)
    big = _wire.uvarint_bytes(2**64 - 1)
    assert _wire.read_uvarint(big, 0, 10) == (2**64 - 1, 10)
