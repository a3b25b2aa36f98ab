"""The security suite's registration (entry point ``pytest_infer.suites``). It judges the error
answers every other suite provoked and loads the server with hostile requests, so it runs last
(after robustness, by name)."""

from ..suite import Suite

SUITE = Suite(
    "security",
    "authentication on every route, what error answers disclose, one hostile request's stall "
    "(suites/security).",
    table="pytest_infer.security.table:SecurityTable",
    plugin="pytest_infer.security.plugin",
    runs_last=True,
)
