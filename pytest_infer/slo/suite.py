"""The SLO suite's registration (entry point ``pytest_infer.suites``)."""

from ..suite import Suite

SUITE = Suite(
    "slo",  # settings.NAME: the gate reads its settings under the suite's name
    "latency and throughput SLO checks (suites/slo).",
    table="pytest_infer.slo.table:SloTable",
    plugin="pytest_infer.slo.plugin",
    cli="pytest_infer.slo.cli:CLI",
)
