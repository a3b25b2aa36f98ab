"""The conformance suite's registration (entry point ``pytest_infer.suites``). Its results are its
tests' outcomes, one row per registered check, so it keeps no table of its own."""
from ..suite import Suite

SUITE = Suite("conformance", "OpenAI-API conformance checks (suites/conformance).", plugin="pytest_infer.conformance.plugin")
