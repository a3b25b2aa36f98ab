"""The SLO suite's registration (entry point ``pytest_infer.suites``)."""

from ..suite import Suite
from .table import SloTable

SUITE = Suite(
    "slo", "latency and throughput SLO checks (suites/slo).", table=SloTable, plugin="pytest_infer.slo.plugin"
)
