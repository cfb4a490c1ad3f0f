"""codec.primitives: Kafka's wire primitives as construct classes, interpreted and compiled."""

from __future__ import annotations

import io
import tracemalloc
import uuid
from typing import Any

import pytest
from construct import Construct, Int8sb, Int16sb, Int32sb, Struct
from hypothesis import given, settings
from hypothesis import strategies as st

from kipwire import codec
from kipwire.codec import DecodeError, EncodeError
from kipwire.codec import primitives as kp

SETTINGS = settings(max_examples=150, deadline=None)

ReplicaState = Struct("replica_id" / Int32sb, "replica_epoch" / Int32sb)
TAGS = kp.TaggedFields(
    {0: "rack" / kp.COMPACT_NULLABLE_STRING, 3: "state" / ReplicaState},
    defaults={"state": {"replica_id": -1, "replica_epoch": -1}},
)


def plain(value: Any) -> Any:
    """A parsed value as plain dicts and lists, without construct's `_io` bookkeeping key.

    (Container equality ignores every key starting with '_', _unknown_tags included.)
    """
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "_io"}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def both(field: Construct) -> tuple[Construct, Construct]:
    """`field` inside a user's Struct, interpreted and compiled."""
    s = Struct("f" / field)
    return s, s.compile()


UUID_BYTES = bytes(range(16))

# (label, construct, value, bytes): hand-written from Kafka's protocol guide.
VECTORS = [
    ("uvarint 0", kp.UNSIGNED_VARINT, 0, "00"),
    ("uvarint 127", kp.UNSIGNED_VARINT, 127, "7f"),
    ("uvarint 128", kp.UNSIGNED_VARINT, 128, "8001"),
    ("uvarint 300", kp.UNSIGNED_VARINT, 300, "ac02"),
    ("uvarint max", kp.UNSIGNED_VARINT, 2**32 - 1, "ffffffff0f"),
    ("uvarlong max", kp.UNSIGNED_VARLONG, 2**64 - 1, "ffffffffffffffffff01"),
    ("varint 0", kp.VARINT, 0, "00"),
    ("varint -1", kp.VARINT, -1, "01"),
    ("varint 1", kp.VARINT, 1, "02"),
    ("varint -64", kp.VARINT, -64, "7f"),
    ("varint 64", kp.VARINT, 64, "8001"),
    ("varint max", kp.VARINT, 2**31 - 1, "feffffff0f"),
    ("varint min", kp.VARINT, -(2**31), "ffffffff0f"),
    ("varlong max", kp.VARLONG, 2**63 - 1, "feffffffffffffffff01"),
    ("varlong min", kp.VARLONG, -(2**63), "ffffffffffffffffff01"),
    ("string", kp.STRING, "abc", "0003616263"),
    ("string empty", kp.STRING, "", "0000"),
    ("string utf-8", kp.STRING, "é", "0002c3a9"),
    ("nullable string null", kp.NULLABLE_STRING, None, "ffff"),
    ("nullable string", kp.NULLABLE_STRING, "a", "000161"),
    ("compact string", kp.COMPACT_STRING, "abc", "04616263"),
    ("compact string empty", kp.COMPACT_STRING, "", "01"),
    ("compact nullable string null", kp.COMPACT_NULLABLE_STRING, None, "00"),
    ("compact string 127 bytes", kp.COMPACT_STRING, "x" * 127, "8001" + "78" * 127),
    ("bytes", kp.BYTES, b"\x01\x02", "000000020102"),
    ("nullable bytes null", kp.NULLABLE_BYTES, None, "ffffffff"),
    ("compact bytes empty", kp.COMPACT_BYTES, b"", "01"),
    ("compact bytes", kp.COMPACT_BYTES, b"\xff", "02ff"),
    ("compact nullable bytes null", kp.COMPACT_NULLABLE_BYTES, None, "00"),
    ("uuid", kp.UUID, uuid.UUID(bytes=UUID_BYTES), UUID_BYTES.hex()),
    ("array int32", kp.ArrayOf(Int32sb), [1, -1], "0000000200000001ffffffff"),
    ("array empty", kp.ArrayOf(Int32sb), [], "00000000"),
    ("nullable array null", kp.ArrayOf(Int32sb, nullable=True), None, "ffffffff"),
    ("compact array int16", kp.CompactArrayOf(Int16sb), [7, -2], "030007fffe"),
    ("compact array empty", kp.CompactArrayOf(Int16sb), [], "01"),
    ("compact nullable array null", kp.CompactArrayOf(Int16sb, nullable=True), None, "00"),
    ("compact array of strings", kp.CompactArrayOf(kp.COMPACT_STRING), ["a", "bc"], "030261036263"),
    (
        "array of structs",
        kp.ArrayOf(ReplicaState),
        [{"replica_id": 1, "replica_epoch": 2}],
        "000000010000000100000002",
    ),  # fmt: skip
    ("nullable struct null", kp.NullableStruct(Struct("x" / Int8sb)), None, "ff"),
    ("nullable struct", kp.NullableStruct(Struct("x" / Int8sb)), {"x": 5}, "0105"),
    ("tags empty", TAGS, {"rack": None, "state": {"replica_id": -1, "replica_epoch": -1}}, "00"),
    (
        "tags rack",
        TAGS,
        {"rack": "r", "state": {"replica_id": -1, "replica_epoch": -1}},
        "0100020272",
    ),  # fmt: skip
    (
        "tags struct and unknown",
        TAGS,
        {
            "rack": None,
            "state": {"replica_id": 2, "replica_epoch": 9},
            "_unknown_tags": {1: b"\xaa", 7: b""},
        },
        "030101aa030800000002000000090700",
    ),
]


@pytest.mark.parametrize(
    ("label", "field", "value", "hexbytes"), VECTORS, ids=[v[0] for v in VECTORS]
)
def test_known_bytes(label: str, field: Construct, value: Any, hexbytes: str) -> None:
    """Each primitive parses and builds hand-written bytes, alone and in a (compiled) Struct."""
    data = bytes.fromhex(hexbytes)
    assert plain(field.parse(data)) == plain(value)
    assert field.build(value) == data
    interpreted, compiled = both(field)
    for s in (interpreted, compiled):
        assert plain(s.parse(data)) == {"f": plain(value)}
        assert s.build({"f": value}) == data


def test_tags_reemitted_in_ascending_order() -> None:
    """Unknown tags read out of order are written back in ascending order, after known ones."""
    data = bytes.fromhex("020901bb0201aa")  # tag 9 then tag 2
    for s in both(kp.TaggedFields({})):
        value = s.parse(data)
        assert value.f["_unknown_tags"] == {9: b"\xbb", 2: b"\xaa"}
        assert s.build(value) == bytes.fromhex("020201aa0901bb")


def test_tags_unknown_only_when_present() -> None:
    """`_unknown_tags` appears only when the section had unknown tags."""
    for s in both(TAGS):
        assert "_unknown_tags" not in s.parse(b"\x00").f


def test_uuid_builds_from_16_bytes() -> None:
    """A uuid field also accepts 16 raw bytes."""
    for s in both(kp.UUID):
        assert s.build({"f": UUID_BYTES}) == UUID_BYTES


def test_sizeof() -> None:
    """UUID has a fixed size; variable-width primitives raise SizeofError, as construct expects."""
    from construct import SizeofError

    assert kp.UUID.sizeof() == 16
    assert Struct("a" / Int32sb, "u" / kp.UUID).sizeof() == 20
    for field in (kp.UNSIGNED_VARINT, kp.VARLONG, kp.STRING, kp.COMPACT_BYTES, TAGS):
        with pytest.raises(SizeofError):
            field.sizeof()
    with pytest.raises(SizeofError):
        kp.ArrayOf(Int32sb).sizeof()
    with pytest.raises(SizeofError):
        kp.NullableStruct(Struct("x" / Int8sb)).sizeof()


# -- round trips --------------------------------------------------------------------------------

ROUND_TRIPS = [
    (kp.UNSIGNED_VARINT, st.integers(0, 2**32 - 1)),
    (kp.UNSIGNED_VARLONG, st.integers(0, 2**64 - 1)),
    (kp.VARINT, st.integers(-(2**31), 2**31 - 1)),
    (kp.VARLONG, st.integers(-(2**63), 2**63 - 1)),
    (kp.STRING, st.text(max_size=40)),
    (kp.NULLABLE_STRING, st.none() | st.text(max_size=40)),
    (kp.COMPACT_STRING, st.text(max_size=200)),
    (kp.COMPACT_NULLABLE_STRING, st.none() | st.text(max_size=40)),
    (kp.BYTES, st.binary(max_size=40)),
    (kp.NULLABLE_BYTES, st.none() | st.binary(max_size=40)),
    (kp.COMPACT_BYTES, st.binary(max_size=200)),
    (kp.COMPACT_NULLABLE_BYTES, st.none() | st.binary(max_size=40)),
    (kp.UUID, st.uuids()),
    (kp.ArrayOf(Int32sb, nullable=True), st.none() | st.lists(st.integers(-(2**31), 2**31 - 1))),
    (kp.CompactArrayOf(kp.COMPACT_STRING), st.lists(st.text(max_size=8), max_size=8)),
    (
        kp.NullableStruct(ReplicaState),
        st.none()
        | st.fixed_dictionaries(
            {"replica_id": st.integers(-5, 5), "replica_epoch": st.integers(-5, 5)}
        ),
    ),
    (
        TAGS,
        st.fixed_dictionaries(
            {
                "rack": st.none() | st.text(max_size=8),
                "state": st.fixed_dictionaries(
                    {"replica_id": st.integers(-2, 2), "replica_epoch": st.integers(-2, 2)}
                ),
            },
            optional={
                "_unknown_tags": st.dictionaries(
                    st.integers(4, 2**31 - 1), st.binary(max_size=6), min_size=1, max_size=4
                )
            },
        ),
    ),
]


@pytest.mark.parametrize(("field", "values"), ROUND_TRIPS, ids=[repr(f) for f, _ in ROUND_TRIPS])
@SETTINGS
@given(data=st.data())
def test_round_trip(field: Construct, values: st.SearchStrategy, data: st.DataObject) -> None:
    """build -> parse returns the value and parse -> build the bytes, interpreted == compiled."""
    value = data.draw(values)
    interpreted, compiled = both(field)
    wire = interpreted.build({"f": value})
    assert compiled.build({"f": value}) == wire
    for s in (interpreted, compiled):
        parsed = s.parse(wire)
        assert plain(parsed["f"]) == plain(value)
        assert s.build(parsed) == wire


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_uvarint_agrees_with_the_codec_runtime(value: int) -> None:
    """The stream primitive and codec._wire's buffer reader agree on every 32-bit value."""
    from kipwire.codec import _wire

    wire = kp.UNSIGNED_VARINT.build(value)
    assert wire == _wire.uvarint_bytes(value)
    assert _wire.read_uvarint(wire, 0) == (value, len(wire))


class _Pipe(io.RawIOBase):
    """A stream that can neither seek nor tell, like a socket or a pipe."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = min(len(b), len(self.data))
        b[:n] = self.data[:n]
        self.data = self.data[n:]
        return n


@pytest.mark.parametrize("wrap", [io.BytesIO, lambda d: io.BufferedReader(io.BytesIO(d)), _Pipe])
def test_uvarint_leaves_the_stream_after_itself(wrap: Any) -> None:
    """A multi-byte varint consumes its own bytes only, whatever the stream."""
    stream = wrap(kp.UNSIGNED_VARINT.build(300_000) + b"\x07rest")
    assert kp.UNSIGNED_VARINT.parse_stream(stream) == 300_000
    assert stream.read() == b"\x07rest"


def test_uvarint_of_fewer_bits() -> None:
    """A construct may ask for a narrower varint than the 32 bits the codec's reader checks."""
    with pytest.raises(DecodeError, match="does not fit in 16 bits") as e:
        kp.UnsignedVarint(16).parse(bytes.fromhex("ffff07"))
    assert e.value.offset == 0
    assert kp.UnsignedVarint(16).parse(kp.UNSIGNED_VARINT.build(65535)) == 65535


# -- bad input ----------------------------------------------------------------------------------

BAD = [
    ("overlong varint", kp.UNSIGNED_VARINT, "808080808001", "longer than 5 bytes"),
    ("varint past 32 bits", kp.UNSIGNED_VARINT, "ffffffff1f", "does not fit in 32 bits"),
    ("overlong varlong", kp.VARLONG, "80" * 10 + "01", "longer than 10 bytes"),
    ("truncated varint", kp.UNSIGNED_VARINT, "80", "ends inside a varint"),
    ("empty varint", kp.VARINT, "", "ends inside a varint"),
    ("negative string length", kp.NULLABLE_STRING, "fffe", "invalid string length -2"),
    ("null non-nullable string", kp.STRING, "ffff", "non-nullable string is null"),
    ("null non-nullable compact string", kp.COMPACT_STRING, "00", "non-nullable string is null"),
    ("negative bytes length", kp.NULLABLE_BYTES, "80000000", "invalid bytes length"),
    ("negative array length", kp.ArrayOf(Int32sb, nullable=True), "fffffffe", "invalid array"),
    ("null non-nullable array", kp.CompactArrayOf(Int8sb), "00", "non-nullable array is null"),
    ("string past the end", kp.STRING, "0005616263", "claims 5 bytes but only 3 remain"),
    ("compact bytes past the end", kp.COMPACT_BYTES, "ffffffff0f00", "claims 4294967294 bytes"),
    ("array past the end", kp.ArrayOf(Int32sb), "7fffffff00000001", "claims 2147483647 elements"),
    ("invalid utf-8", kp.COMPACT_STRING, "03c328", "not valid UTF-8"),
    ("truncated uuid", kp.UUID, "0001", "claims 16 bytes but only 2 remain"),
    ("truncated classic length", kp.STRING, "00", "ends inside a length"),
    ("tag size lies", TAGS, "010309000000010000000200", "declares 9 bytes but its value"),
    ("tag past the end", TAGS, "01051000", "claims 16 bytes"),
    ("nullable struct marker missing", kp.NullableStruct(Struct("x" / Int8sb)), "", "marker"),
]


@pytest.mark.parametrize(("label", "field", "hexbytes", "message"), BAD, ids=[b[0] for b in BAD])
def test_rejects_bad_input(label: str, field: Construct, hexbytes: str, message: str) -> None:
    """Bad bytes raise DecodeError saying what is wrong, interpreted and compiled."""
    data = bytes.fromhex(hexbytes)
    for s in both(field):
        with pytest.raises(DecodeError, match=message):
            s.parse(data)


def test_decode_error_has_offset_and_path() -> None:
    """Interpreted parsing names the field; both modes give the stream offset."""
    s = Struct("a" / Int8sb, "name" / kp.COMPACT_STRING)
    data = bytes.fromhex("0705c328")  # length 4 claimed, 2 bytes left
    with pytest.raises(DecodeError) as e:
        s.parse(data)
    assert e.value.path == "name"
    assert e.value.offset == 2
    with pytest.raises(DecodeError) as e:
        s.compile().parse(data)
    assert e.value.offset == 2


def test_array_element_error_path() -> None:
    """An error inside an array element names its index."""
    s = Struct("names" / kp.ArrayOf(kp.STRING))
    with pytest.raises(DecodeError) as e:
        s.parse(bytes.fromhex("00000002000161ffff"))
    assert e.value.path == "names[1]"


def test_huge_array_claim_fails_before_allocating() -> None:
    """A 2^31-element claim on a few bytes fails at once, allocating next to nothing."""
    data = bytes.fromhex("7fffffff") + bytes(20)
    for s in both(kp.ArrayOf(kp.STRING)):
        tracemalloc.start()
        try:
            with pytest.raises(DecodeError):
                s.parse(data)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 256 * 1024


class OneWayStream(io.RawIOBase):
    """A non-seekable stream (like a pipe) that records how much each read asks for."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.requests: list[int] = []

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        self.requests.append(n)
        chunk = self.data[self.pos : self.pos + n]
        self.pos += len(chunk)
        return chunk

    def tell(self) -> int:
        raise OSError("not seekable")


def test_huge_length_on_unseekable_stream_reads_in_bounded_pieces() -> None:
    """When a stream cannot say what is left, a 2 GiB claim is never requested at once."""
    stream = OneWayStream(bytes.fromhex("7fffffff") + b"abc")
    with pytest.raises(DecodeError, match="claims 2147483647 bytes but only 3 remain"):
        kp.BYTES.parse_stream(stream)
    assert max(stream.requests) <= 1 << 20


def test_unseekable_stream_parses() -> None:
    """Primitives need nothing but read() from a stream."""
    s = Struct("a" / kp.VARINT, "b" / kp.COMPACT_STRING, "c" / kp.CompactArrayOf(Int8sb))
    wire = s.build({"a": -3, "b": "xy", "c": [1, 2]})
    assert plain(s.parse_stream(OneWayStream(wire))) == {"a": -3, "b": "xy", "c": [1, 2]}
    assert plain(s.compile().parse_stream(OneWayStream(wire))) == {"a": -3, "b": "xy", "c": [1, 2]}


BAD_VALUES = [
    ("negative uvarint", kp.UNSIGNED_VARINT, -1, "cannot hold -1"),
    ("uvarint too big", kp.UNSIGNED_VARINT, 2**32, "cannot hold"),
    ("varint too big", kp.VARINT, 2**31, "cannot hold"),
    ("varlong not an int", kp.VARLONG, "7", "expected an int"),
    ("string not a str", kp.STRING, 5, "expected a str"),
    ("null string", kp.COMPACT_STRING, None, "null is not allowed"),
    ("classic string too long", kp.STRING, "x" * 32768, "longer than 32767"),
    ("lone surrogate", kp.COMPACT_STRING, "\ud800", "UTF-8"),
    ("bytes not bytes", kp.BYTES, "abc", "expected bytes"),
    ("uuid wrong size", kp.UUID, b"short", "16 bytes"),
    ("null array", kp.ArrayOf(Int32sb), None, "not nullable"),
    ("array not a list", kp.CompactArrayOf(Int8sb), 3, "expected a list"),
    ("unknown tagged field", TAGS, {"nope": 1}, "unknown tagged field"),
    ("unknown tag clashes", TAGS, {"_unknown_tags": {0: b"x"}}, "is a known tag"),
    ("unknown tag not bytes", TAGS, {"_unknown_tags": {9: "x"}}, "must hold bytes"),
]


@pytest.mark.parametrize(
    ("label", "field", "value", "message"), BAD_VALUES, ids=[b[0] for b in BAD_VALUES]
)
def test_rejects_bad_values(label: str, field: Construct, value: Any, message: str) -> None:
    """Values that cannot be encoded raise EncodeError, interpreted and compiled."""
    for s in both(field):
        with pytest.raises(EncodeError, match=message):
            s.build({"f": value})


def test_tagged_field_encode_error_names_the_field() -> None:
    """An EncodeError inside a known tagged field carries that field's name."""
    with pytest.raises(EncodeError) as e:
        TAGS.build({"rack": 7})
    assert e.value.path == "rack"


def test_tagged_fields_need_names() -> None:
    """A tagged field without a name, or a bad tag, is a programming error caught at once."""
    with pytest.raises(ValueError, match="needs a name"):
        kp.TaggedFields({0: kp.STRING})
    with pytest.raises(ValueError, match="non-negative"):
        kp.TaggedFields({-1: "x" / kp.STRING})


# -- message codecs inside a user's construct ----------------------------------------------------


def test_message_codec_inside_a_struct() -> None:
    """A MessageCodec works as a field of a user's Struct, interpreted and compiled."""
    body = codec.message("ApiVersionsRequest", 3)
    frame = Struct(
        "magic" / Int8sb,
        "client" / kp.COMPACT_STRING,
        "body" / body,
        "trailer" / Int16sb,
    )
    value = {
        "magic": 2,
        "client": "me",
        "body": {"client_software_name": "kipwire", "client_software_version": "1.0"},
        "trailer": -7,
    }
    wire = bytes.fromhex("02036d65") + body.build(value["body"]) + bytes.fromhex("fff9")
    for s in (frame, frame.compile()):
        assert s.build(value) == wire
        parsed = s.parse(wire)
        assert plain(parsed) == value
        assert s.build(parsed) == wire


def test_message_codec_error_inside_a_struct() -> None:
    """A broken message inside a user's Struct raises the codec's DecodeError."""
    frame = Struct("a" / Int8sb, "body" / codec.message("ApiVersionsRequest", 3))
    for s in (frame, frame.compile()):
        with pytest.raises(DecodeError):
            s.parse(bytes.fromhex("0109"))
