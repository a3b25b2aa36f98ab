"""Fixtures of the structured-output suite: the request path a test sends its schemas on."""
from __future__ import annotations

import pytest

from pytest_infer.structured import RequestPath
from pytest_infer.structured.runner import NATIVE_PATHS, RESPONSE_FORMAT, RESPONSE_FORMAT_STREAM

PATHS = ("response_format", "response_format-stream", "native")


@pytest.fixture(params=PATHS)
def request_path(request: pytest.FixtureRequest, infer_live_server) -> RequestPath:
    """Every way the framework takes a schema: response_format, streamed, and its own extra field."""
    if request.param == "native":
        native = NATIVE_PATHS.get(infer_live_server.framework)
        if native is None:
            pytest.skip(f"{infer_live_server.framework} has no schema field of its own besides response_format")
        return native
    return RESPONSE_FORMAT if request.param == "response_format" else RESPONSE_FORMAT_STREAM
