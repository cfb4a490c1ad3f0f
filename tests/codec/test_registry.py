"""codec.registry: a message name or version the codec does not have gets a clear error."""

from __future__ import annotations

import pytest

from kipwire import codec


def test_an_unknown_message_names_close_matches() -> None:
    with pytest.raises(codec.UnknownMessageError) as e:
        codec.message("Fetch", 15)
    text = str(e.value)
    assert text.startswith("unknown message 'Fetch' (did you mean 'FetchRequest', 'FetchResponse'")
    assert isinstance(e.value, KeyError)  # callers that catch KeyError keep working


@pytest.mark.parametrize(
    ("name", "meant"), [("MetadataRequst", "MetadataRequest"), ("fetchrequest", "FetchRequest")]
)
def test_misspelt_names(name: str, meant: str) -> None:
    with pytest.raises(KeyError, match=f"did you mean '{meant}'"):
        codec.message(name, 0)


def test_nothing_close() -> None:
    with pytest.raises(KeyError) as e:
        codec.message("Zzz", 0)
    assert str(e.value) == "unknown message 'Zzz'"
    with pytest.raises(KeyError, match="unknown message None"):
        codec.message(None, 0)  # type: ignore[arg-type]


def test_a_version_that_is_not_an_int() -> None:
    with pytest.raises(TypeError, match="a message version is an int, got str"):
        codec.message("FetchRequest", "15")  # type: ignore[arg-type]
    with pytest.raises(codec.UnsupportedVersionError, match=r"no version 99 \(versions 0-"):
        codec.message("FetchRequest", 99)


def test_wire_enums_carry_kafkas_numbers() -> None:
    from kipwire import codec

    assert codec.ConfigResourceType.BROKER == 4 and codec.ConfigResourceType.GROUP == 32
    assert codec.ConfigSource.DEFAULT_CONFIG == 5
    assert codec.ElectionType.UNCLEAN == 1 and codec.LeaderRecoveryState.RECOVERING == 1
    assert codec.AclOperation.IDEMPOTENT_WRITE == 12 and codec.PatternType.PREFIXED == 4
    assert codec.UncleanRecoveryStrategy("Balanced") is codec.UncleanRecoveryStrategy.BALANCED
    assert codec.OffsetSpec.MAX_TIMESTAMP == -3 and codec.CoordinatorType.SHARE == 2
