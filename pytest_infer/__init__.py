"""pytest-infer: test LLM inference servers like any other software.

The public API, what users' suites, conftest files and plugins may rely on, is
what ``__all__`` names; everything else is internal and may change. Names are
imported on first use: the tiny-model builder runs under engine interpreters
that lack this package's dependencies, and a pytest run that uses no suite
should not pay for one.
"""

from __future__ import annotations

from ._lazy import exports

__version__ = "0.1.0"

_NAMES = {
    # a suite: its registration, its results table, its rows in every report, its findings for the
    # gate
    "Suite": "suite",
    "SuiteCli": "suite",
    "Table": "table",
    "Measured": "table",
    "Section": "table",
    "Cell": "table",
    "Finding": "table",
    "Pairing": "table",
    # a framework adapter (entry-point group pytest_infer.adapters)
    "BaseAdapter": "adapters.base",
    "Environment": "adapters.base",
    "LaunchRequest": "adapters.base",
    "LaunchSpec": "adapters.base",
    "FrameworkVersion": "adapters.base",
    # reaching the server under test
    "Endpoint": "client.endpoint",
    "InferClient": "client.http",
    "ServerInfo": "server.pool",
    # outcomes that are not verdicts, and the root of every error the plugin raises
    "InferError": "outcomes",
    "Unsupported": "outcomes",
    "Inconclusive": "outcomes",
    "NotRun": "outcomes",
    # the results model every report renders
    "SessionResults": "results.model",
    "TargetRecord": "results.model",
    "TestRecord": "results.model",
    "InferSession": "session",
}
__getattr__, __dir__ = exports(__name__, _NAMES)
__all__ = ["__version__", *_NAMES]
