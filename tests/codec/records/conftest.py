"""`records_path`: runs a test module on both record loops, the compiled ones
(`codec/_compiled/records.c`, when built) and the Python ones
(`pytestmark = pytest.mark.usefixtures("records_path")`), as `codec_path` does for messages."""

from collections.abc import Iterator

import pytest

from kipwire.codec.records import batch


@pytest.fixture(params=["compiled", "python"])
def records_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test on the compiled record loops and again on the Python ones (when built)."""
    if request.param == "compiled" and batch.NATIVE is None:
        pytest.skip("the compiled record loops are not built: the python run covers the test")
    batch.use_compiled(request.param == "compiled")
    try:
        yield request.param
    finally:
        batch.use_compiled(True)
