"""The SLO suite's registration (entry point ``pytest_infer.suites``)."""

from ..suite import Suite
from .settings import NAME

SUITE = Suite(
    NAME,
    "latency and throughput SLO checks (suites/slo).",
    table="pytest_infer.slo.table:SloTable",
    plugin="pytest_infer.slo.plugin",
    cli="pytest_infer.slo.cli",
)
