"""The conformance suite's registration (entry point ``pytest_infer.suites``). Its verdicts are its
tests' outcomes, one row per registered check; its table keeps the shape of every answer, for API
drift."""

from ..suite import Suite

SUITE = Suite(
    "conformance",
    "OpenAI-API conformance checks (suites/conformance).",
    table="pytest_infer.conformance.table:ShapeTable",
    plugin="pytest_infer.conformance.plugin",
)
