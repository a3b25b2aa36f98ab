"""The consistency suite's registration (entry point ``pytest_infer.suites``)."""

from ..suite import Suite

SUITE = Suite(
    "consistency",
    "each request in a batch gets the answer it gets alone, with its own parameters "
    "(suites/consistency).",
    table="pytest_infer.consistency.table:ConsistencyTable",
    plugin="pytest_infer.consistency.plugin",
)
