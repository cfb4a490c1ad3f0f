"""Hypothesis profiles for the codec tests: `--hypothesis-profile=no-shrink` reports failures
without minimising them (quicker while fixing a bug); `codec_path`, which runs a test module on
both decode paths (`pytestmark = pytest.mark.usefixtures("codec_path")`)."""

from collections.abc import Iterator

import pytest
from hypothesis import Phase, settings

from kipwire import codec
from kipwire.codec.messages import registry

settings.register_profile(
    "no-shrink", phases=[Phase.explicit, Phase.reuse, Phase.generate], print_blob=True
)


@pytest.fixture(params=["compiled", "python"])
def codec_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test on the compiled decoders and again on the Python parsers (when built)."""
    if request.param == "compiled" and not codec.compiled:
        pytest.skip("the compiled codec is not built: the python run covers the test")
    registry.use_compiled(request.param == "compiled")
    try:
        yield request.param
    finally:
        registry.use_compiled(True)
