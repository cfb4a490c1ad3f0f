"""The codecs: Kafka's framings (xerial snappy, lz4 frames old and new), other writers' output."""

from __future__ import annotations

import gzip
import os

import cramjam
import lz4.frame
import pytest
import snappy
import zstandard
from kafka import codec as kafka_codec

from kipwire.codec.errors import DecodeError
from kipwire.codec.records import Compression
from kipwire.codec.records.compression import compress, decompress
from kipwire.codec.records.lz4frame import MAGIC, xxh32

pytestmark = pytest.mark.usefixtures("records_path")

DATA = b"".join(b"record %d: %s\n" % (i, os.urandom(8).hex().encode()) for i in range(5000))
CODECS = [c for c in Compression if c is not Compression.NONE]


@pytest.mark.parametrize(
    ("data", "seed", "digest"),
    [
        (b"", 0, 0x02CC5D05),
        (b"a", 0, 0x550D7456),
        (b"abc", 0, 0x32D153FF),
        (b"Nobody inspects the spammish repetition", 0, 0xE2293B2F),
    ],
)
def test_xxh32_reference_vectors(data, seed, digest) -> None:
    assert xxh32(data, seed) == digest


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name.lower())
def test_round_trip_and_kafka_python_reads_ours(codec) -> None:
    packed = compress(codec, DATA)
    assert decompress(codec, packed) == DATA
    reader = {
        Compression.GZIP: kafka_codec.gzip_decode,
        Compression.SNAPPY: kafka_codec.snappy_decode,
        Compression.LZ4: kafka_codec.lz4_decode,
        Compression.ZSTD: kafka_codec.zstd_decode,
    }[codec]
    assert reader(packed) == DATA


def test_empty_payload_round_trips() -> None:
    for codec in CODECS:
        assert decompress(codec, compress(codec, b"")) == b""


def test_snappy_is_xerial_framed_in_32k_blocks() -> None:
    packed = compress(Compression.SNAPPY, DATA)
    assert packed[:16] == b"\x82SNAPPY\x00" + bytes.fromhex("0000000100000001")
    first_block = int.from_bytes(packed[16:20], "big")
    assert len(cramjam.snappy.decompress_raw(packed[20 : 20 + first_block])) == 32 * 1024


@pytest.mark.parametrize(
    "packed",
    [
        snappy.compress(DATA),  # raw snappy, as some non-Java clients write
        kafka_codec.snappy_encode(DATA, xerial_compatible=True, xerial_blocksize=4096),
        kafka_codec.snappy_encode(DATA, xerial_compatible=False),
    ],
    ids=["python-snappy-raw", "xerial-4k", "kafka-python-raw"],
)
def test_snappy_reads_raw_and_xerial(packed) -> None:
    assert decompress(Compression.SNAPPY, packed) == DATA


def test_lz4_frame_layout_is_kafkas() -> None:
    packed = compress(Compression.LZ4, DATA)
    flg, bd, hc = packed[4], packed[5], packed[6]
    assert packed[:4] == MAGIC
    assert flg == 0x60  # version 1, independent blocks, no checksums, no content size
    assert bd == 0x40  # 64 KiB blocks
    assert hc == (xxh32(bytes([flg, bd])) >> 8) & 0xFF
    assert packed.endswith(b"\x00\x00\x00\x00")
    assert bytes(cramjam.lz4.decompress(packed)) == DATA  # a strict reader accepts it


def test_lz4_magic_0_writes_and_reads_kafkas_broken_header_checksum() -> None:
    packed = compress(Compression.LZ4, DATA, magic=0)
    assert packed[6] == (xxh32(packed[:6]) >> 8) & 0xFF  # hashed with the magic number
    assert packed[6] != (xxh32(packed[4:6]) >> 8) & 0xFF
    with pytest.raises(cramjam.DecompressionError):
        cramjam.lz4.decompress(packed)  # a strict reader rejects the old framing
    assert decompress(Compression.LZ4, packed, magic=0) == DATA


@pytest.mark.parametrize(
    "options",
    [
        {},  # python-lz4's defaults: linked blocks
        {"block_linked": False, "store_size": True, "content_checksum": True},
        {"block_linked": False, "block_checksum": True, "block_size": lz4.frame.BLOCKSIZE_MAX4MB},
        {"block_linked": True, "block_size": lz4.frame.BLOCKSIZE_MAX1MB},
    ],
)
def test_lz4_reads_other_writers_frames(options) -> None:
    assert decompress(Compression.LZ4, lz4.frame.compress(DATA, **options)) == DATA


def test_lz4_frame_with_uncompressible_block() -> None:
    noise = os.urandom(100_000)
    packed = compress(Compression.LZ4, noise)
    assert int.from_bytes(packed[7:11], "little") & 0x80000000  # stored as is
    assert decompress(Compression.LZ4, packed) == noise


def test_lz4_declared_content_size_over_the_limit() -> None:
    packed = lz4.frame.compress(bytes(5000), block_linked=False, store_size=True)
    with pytest.raises(DecodeError, match="declares 5000 bytes"):
        decompress(Compression.LZ4, packed, limit=4999)


@pytest.mark.parametrize("content_size", [True, False])
def test_zstd_with_and_without_content_size(content_size) -> None:
    compressor = zstandard.ZstdCompressor(write_content_size=content_size)
    assert decompress(Compression.ZSTD, compressor.compress(DATA)) == DATA
    zeros = bytes(3 << 20)  # compresses ~10000:1, far past the first output guess
    assert decompress(Compression.ZSTD, compressor.compress(zeros)) == zeros


def test_gzip_multiple_members() -> None:
    packed = gzip.compress(DATA[:1000]) + gzip.compress(DATA[1000:])
    assert decompress(Compression.GZIP, packed) == DATA


@pytest.mark.parametrize(
    ("codec", "packed", "message"),
    [
        (Compression.GZIP, gzip.compress(DATA)[:-20], "ends early"),
        (Compression.GZIP, b"not gzip at all", "corrupt"),
        (Compression.SNAPPY, b"\x82SNAPPY\x00\x00\x00", "header truncated"),
        (Compression.SNAPPY, b"\x82SNAPPY\x00" + bytes(8) + b"\x7f\xff\xff\xff", "does not fit"),
        (Compression.SNAPPY, b"\xff\xff\xff\xff\xff\xff", "corrupt"),
        (Compression.LZ4, b"\x04\x22\x4d", "not an LZ4 frame"),
        (Compression.LZ4, MAGIC + b"\x60\x40", "truncated"),
        (Compression.LZ4, MAGIC + b"\x68\x40\x00", "header truncated"),  # content size cut
        (Compression.LZ4, MAGIC + b"\x68\x40" + bytes(5), "header truncated"),
        (Compression.LZ4, MAGIC + b"\xa0\x40\x00", "version"),
        (Compression.LZ4, MAGIC + b"\x60\x00\x00", "block size"),
        (Compression.LZ4, MAGIC + b"\x60\x40\x00" + b"\x05\x00\x00\x00ab", "does not fit"),
        (Compression.LZ4, MAGIC + b"\x60\x40\x00", "end mark"),
        (Compression.LZ4, MAGIC + b"\x60\x40\x00" + b"\x02\x00\x00\x00\xff\xff", "corrupt"),
        (Compression.ZSTD, b"\x28\xb5\x2f\xfd garbage", "corrupt"),
    ],
)
def test_corrupt_streams(codec, packed, message) -> None:
    with pytest.raises(DecodeError, match=message):
        decompress(codec, packed)


def test_snappy_bomb_is_refused_before_allocating() -> None:
    # the raw snappy length prefix says 1 GiB: refused from the prefix alone
    with pytest.raises(DecodeError, match="more than"):
        decompress(Compression.SNAPPY, b"\x80\x80\x80\x80\x04" + b"\x00" * 10)
