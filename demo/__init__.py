"""kipwire.demo: KIP-966's story end to end, the one place that joins the mock and the captures.

`make demo` (`kipwire`, `python -m kipwire.demo`) runs a 3-broker mock cluster through KIP-966's
"last replica standing" with a real client, ELR on and then off, records both runs, decodes the
captures and compares them into a report. DESIGN.md lets `mockbroker` import nothing from
`captures` but the pcap writer, so the story that needs both lives here: this package imports
`mockbroker`, `captures` and `codec`, and nothing imports it.

  `story`  one recorded run of the story against the mock cluster (`run_story`, `Progress`)
  `cli`    the five steps (`run`), the side-by-side table, the decode and compare, `main`
"""

from __future__ import annotations

from .cli import DemoRun, StepFailed, decode_captures, format_table, main, run
from .story import DemoError, Progress, StoryResult, count_not_enough_replicas, run_story

__all__ = [
    "DemoError",
    "DemoRun",
    "Progress",
    "StepFailed",
    "StoryResult",
    "count_not_enough_replicas",
    "decode_captures",
    "format_table",
    "main",
    "run",
    "run_story",
]
