"""Chart axes: round tick values a reader can read off, on log and linear scales."""

from __future__ import annotations

import pytest

from kipwire.captures.comparing.charts import histogram, linear_ticks, log_ticks


def test_log_axis_ticks_are_decades_with_2_and_5_on_short_ranges() -> None:
    # 0.07 ms .. 39 ms: the old axis printed 0.0701, 0.34, 1.65, 8.02, 38.9
    assert log_ticks(-1.15, 1.59) == [0.1, 1.0, 10.0]
    assert log_ticks(0.0, 1.0) == pytest.approx([1, 2, 5, 10])
    assert log_ticks(-4.0, 2.0) == pytest.approx([1e-4, 1e-3, 1e-2, 0.1, 1, 10, 100])


def test_linear_axis_ticks_are_round_and_cover_the_range() -> None:
    ticks = linear_ticks(2.1, 11.7)
    assert ticks[0] <= 2.1 and ticks[-1] >= 11.7
    assert ticks == [2, 4, 6, 8, 10, 12]


def test_histogram_is_a_png_also_without_data() -> None:
    for series in ({"a": [1.0, 2.0, 50.0]}, {"a": []}):
        assert histogram("t", series).startswith(b"\x89PNG\r\n\x1a\n")
