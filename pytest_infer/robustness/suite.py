"""The robustness suite's registration (entry point ``pytest_infer.suites``). It abuses the server,
so it runs last: a server it breaks takes no other suite's verdicts with it."""

from ..suite import Suite

SUITE = Suite(
    "robustness",
    "bad input and abuse checks (suites/robustness).",
    table="pytest_infer.robustness.table:RobustnessTable",
    plugin="pytest_infer.robustness.plugin",
    runs_last=True,
)
