"""pytest glue of the security suite: its stall limits (``--security-stall``), and each target's row
of its table.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..options import add_option, option_value

STALL = "--security-stall"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_option(
        parser,
        STALL,
        "the security suite's stall measurement: light load, hostile request's time, limits (YAML; "
        "default: the bundled stall.yaml).",
        metavar="PATH",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Reads the limits now, so a bad file stops the run before any server starts; a run that tests
    no server and names no file reads nothing (the stall machinery loads httpx and the load client).
    """
    # lazy: this plugin loads in every pytest run; its machinery only in a security session
    from ..session import tests_a_server

    given = option_value(config, STALL)
    if not given and not tests_a_server(config):
        return
    # lazy: this plugin loads in every pytest run; its machinery only in a security session
    from .stall import LIMITS_FILE, StallLimits

    path = given or LIMITS_FILE
    try:
        config.stash[_LIMITS] = StallLimits.load(path)
    except (OSError, ValueError, TypeError) as exc:
        raise pytest.UsageError(f"{STALL}={path}: {exc}") from None


_LIMITS = pytest.StashKey[Any]()


@pytest.fixture(scope="session")
def security_limits(pytestconfig: pytest.Config):
    """The stall measurement's load and limits."""
    return pytestconfig.stash[_LIMITS]


@pytest.fixture(scope="session")
def security_record(infer_target, infer_session) -> dict[str, Any]:
    """This target's row of the security table: ``routes``, ``leaks``, ``errors_judged``,
    ``stalls``.
    """
    return infer_session.results.table("security").target(infer_target.id)


@pytest.fixture(scope="session")
def security_known_routes(infer_server) -> tuple:
    """The routes the target's adapter knows (the OpenAI ones behind an endpoint of no known
    framework).
    """
    return infer_server.adapter.known_routes
