"""An already-running server (``--infer-endpoint``): nothing to launch, only to detect."""

from __future__ import annotations

import re

import httpx

from . import registry
from .base import Adapter, BaseAdapter, FrameworkVersion, LaunchRequest, LaunchSpec, VersionRoute


class EndpointAdapter(BaseAdapter):
    """An endpoint whose framework is neither named nor detected: the OpenAI API and nothing of any
    framework's own.
    """

    name = "endpoint"
    title = "an OpenAI-compatible endpoint"

    def launch(self, request: LaunchRequest) -> LaunchSpec:
        raise TypeError("an endpoint is already running: nothing launches it")


ENDPOINT = EndpointAdapter()


def detect_endpoint(client: httpx.Client) -> tuple[Adapter | None, FrameworkVersion, list[str]]:
    """Guess the framework and version behind an endpoint from what it exposes.

    Returns (the framework's adapter or None, version, served model ids). Every probe is optional: a
    server that answers none of them with anything useful is still testable, and any HTTP answer (a
    404, a 500) shows it reachable; one that gives none to ``GET /v1/models`` (connection refused, a
    name that does not resolve, a TLS handshake refused, no answer in time) cannot be tested at all,
    and the ``httpx.TransportError`` is raised; an answer whose body does not decode as its headers
    say raises ``httpx.DecodingError`` (the pool makes either the target's one error). What betrays
    a framework (``owned_by``, ``version_routes``) comes from the adapters, in registry order.
    """
    adapters = list(registry.ADAPTERS.values())
    owners = {owner.lower(): adapter for adapter in adapters for owner in adapter.owned_by}
    routes: dict[str, tuple[VersionRoute, Adapter]] = {}
    for adapter in adapters:
        for route in adapter.version_routes:
            routes.setdefault(route.path, (route, adapter))
    framework: Adapter | None = None
    version: FrameworkVersion | None = None
    models: list[str] = []
    resp = client.get("/v1/models")  # no answer at all: raised, the endpoint is unreachable
    server_header = resp.headers.get("server")
    try:
        if resp.status_code == 200:
            listing = resp.json()
            data = listing.get("data") if isinstance(listing, dict) else None
            # a server that answers `[]` or `{"data": 5}` lists no model
            data = data if isinstance(data, list) else []
            models = [str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")]
            owned_by = {str(m.get("owned_by", "")).lower() for m in data if isinstance(m, dict)}
            framework = next((owners[o] for o in owned_by if o in owners), None)
    except ValueError:  # not JSON: no model listed
        pass
    for path, (route, owner) in routes.items():
        try:
            resp = client.get(path)
            if (
                resp.status_code == 200
                and isinstance(resp.json(), dict)
                and resp.json().get(route.key)
            ):
                version = FrameworkVersion(str(resp.json()[route.key]), source=f"GET {path}")
                framework = framework or (owner if route.identifies else None)
                break
        except (httpx.HTTPError, ValueError):
            continue
    if version is None and server_header:
        match = re.search(r"(\d+\.\d+(?:\.\d+)?)", server_header)
        version = FrameworkVersion(
            match.group(1) if match else None, source=f"Server: {server_header}"
        )
    return (
        framework,
        version
        or FrameworkVersion(None, source="endpoint", error="the endpoint exposes no version"),
        models,
    )
