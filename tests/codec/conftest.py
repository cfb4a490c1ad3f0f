"""Hypothesis profiles for the codec tests: `--hypothesis-profile=no-shrink` reports failures
without minimising them (quicker while fixing a bug)."""

from hypothesis import Phase, settings

settings.register_profile(
    "no-shrink", phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=True
)
