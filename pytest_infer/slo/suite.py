"""The SLO suite's registration (entry point ``pytest_infer.suites``)."""

from ..suite import Suite
from .settings import NAME
from .table import SloTable

SUITE = Suite(
    NAME,
    "latency and throughput SLO checks (suites/slo).",
    table=SloTable,
    plugin="pytest_infer.slo.plugin",
    cli="pytest_infer.slo.cli",
)
