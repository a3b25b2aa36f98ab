"""The structured-output suite's registration (entry point ``pytest_infer.suites``)."""

from ..suite import Suite

SUITE = Suite(
    "structured",
    "structured-output checks under constrained decoding (suites/structured).",
    table="pytest_infer.structured.table:StructuredTable",
    plugin="pytest_infer.structured.plugin",
)
