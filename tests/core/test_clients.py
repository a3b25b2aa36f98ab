"""Every HTTP client the plugin makes shares one TLS context: building one reads the CA bundle (~50 ms of CPU), and a
session makes a client per check and per readiness poll."""

from __future__ import annotations

import ssl

import pytest

from pytest_infer.client.endpoint import Endpoint
from pytest_infer.client.http import InferClient
from pytest_infer.client.tls import tls
from pytest_infer.conformance.context import CheckContext
from pytest_infer.load.client import async_client


def test_the_clients_of_a_session_read_the_ca_bundle_once(monkeypatch: pytest.MonkeyPatch):
    loads = []
    original = ssl.SSLContext.load_verify_locations
    monkeypatch.setattr(
        ssl.SSLContext,
        "load_verify_locations",
        lambda self, *a, **k: loads.append(a or k) or original(self, *a, **k),
    )
    tls.cache_clear()
    endpoint = Endpoint("https://127.0.0.1:9", "m", "secret", 5.0)
    clients = [InferClient(endpoint) for _ in range(3)] + [endpoint.http() for _ in range(3)]
    clients.append(CheckContext(endpoint=endpoint).http)
    clients.append(async_client(endpoint, concurrency=4))
    assert len(loads) == 1, loads
    for client in clients:
        pool = (
            client._transport._pool
        )  # httpx keeps the context its connections will wrap sockets with here
        assert pool._ssl_context is tls()
