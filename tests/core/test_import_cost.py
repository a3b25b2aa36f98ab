"""Every pytest run where the plugin is installed loads it and every installed suite's definition and plugin
module, tests of inference servers or not: none of them may load the libraries a test only needs once it talks to a
server, renders a report or generates schemas, nor the plugin's own machinery that only a session testing a server
uses (benchmarks/import_cost.py measures what is left)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "httpx", "jsonschema", "hypothesis", "numpy", "matplotlib", "scipy", "psutil", "openai", "anthropic", "yaml",
    "rich",
)  # fmt: skip
LOAD = """
import json, sys
import pytest
before = set(sys.modules)
import pytest_infer.plugin
from importlib.metadata import entry_points
for ep in entry_points(group="pytest_infer.suites"):
    __import__(ep.load().plugin)
print(json.dumps(sorted(set(sys.modules) - before)))
"""
# what a session that tests a server imports when it starts one, reads results or renders: not the plugin's load
MACHINERY = (
    "pytest_infer.adapters.base",  # the registry names the frameworks without importing an adapter
    "pytest_infer.table",  # each Suite names its table as "module:class"
    "pytest_infer.slo.table",
    "pytest_infer.security.table",
    "pytest_infer.results.model",
    "pytest_infer.server.pool",
    "pytest_infer.targets",
    "pytest_infer.conformance.scripts",
)


def loaded_by_the_plugin() -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", LOAD], capture_output=True, text=True, check=True
    ).stdout
    return set(json.loads(out))


def test_loading_the_plugin_and_its_suites_loads_no_heavy_library():
    loaded = {module.split(".")[0] for module in loaded_by_the_plugin()}
    assert "pytest_infer" in loaded and loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))


def test_loading_the_plugin_and_its_suites_loads_none_of_the_session_machinery():
    loaded = loaded_by_the_plugin()
    assert "pytest_infer.plugin" in loaded and loaded.isdisjoint(MACHINERY), sorted(
        loaded & set(MACHINERY)
    )


# what a run that tests no server must not load: the load client, the stall machinery, the drift reader, the servers,
# the results model, the targets and the adapters
CONFIGURE_MACHINERY = {
    "pytest_infer.load",
    "pytest_infer.security.stall",
    "pytest_infer.slo.drift",
    "pytest_infer.server.pool",
    "pytest_infer.results.model",
    "pytest_infer.targets",
    "pytest_infer.adapters.base",
}
RUN = """
import json, sys
import pytest
pytest.main(["-q", "-p", "no:cacheprovider", "-p", "no:randomly", *sys.argv[1:]])
print("MODULES", json.dumps(sorted(sys.modules)))
"""


def loaded_by_a_run(project, *options: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", RUN, "test_one.py", *options],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return set(json.loads(out.split("MODULES ", 1)[1]))


def test_a_run_that_tests_no_server_loads_no_heavy_library_through_the_plugin(tmp_path):
    """Import, options, configure, collection and finish of a run with no server: what the plugin and its suites add
    to the same run without them (``-p no:infer``) holds no heavy library and none of the session machinery."""
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n")
    added = loaded_by_a_run(tmp_path) - loaded_by_a_run(tmp_path, "-p", "no:infer")
    assert "pytest_infer.plugin" in added
    unwanted = {module for module in added if module.split(".")[0] in HEAVY} | (
        added & CONFIGURE_MACHINERY
    )
    assert not unwanted, sorted(unwanted)
