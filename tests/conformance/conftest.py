"""The conformance tests' server: the fake one made complete (``BASE``), reset for every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_infer import conformance
from pytest_infer.client.endpoint import Endpoint
from pytest_infer.testing.fakeserver import MODEL, FakeServer

from .deviations import BASE


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with FakeServer(BASE) as server:
        yield server


@pytest.fixture
def ctx(fake: FakeServer) -> Iterator[conformance.CheckContext]:
    fake.set_deviation(BASE)
    fake.forget()
    with conformance.CheckContext(
        Endpoint(fake.base_url, MODEL, timeout=10), framework="fake"
    ) as context:
        yield context
    fake.set_deviation(BASE)
