"""Every pytest run where the plugin is installed loads it and every installed suite's definition and plugin
module, tests of inference servers or not: none of them may load the libraries a test only needs once it talks to a
server, renders a report or generates schemas (benchmarks/import_cost.py measures what is left)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("httpx", "jsonschema", "hypothesis", "numpy", "matplotlib", "psutil", "openai", "anthropic", "yaml", "rich")
LOAD = """
import json, sys
import pytest
before = set(sys.modules)
import pytest_infer.plugin
from importlib.metadata import entry_points
for ep in entry_points(group="pytest_infer.suites"):
    __import__(ep.load().plugin)
print(json.dumps(sorted({m.split(".")[0] for m in set(sys.modules) - before})))
"""


def test_loading_the_plugin_and_its_suites_loads_no_heavy_library():
    out = subprocess.run([sys.executable, "-c", LOAD], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert "pytest_infer" in loaded and loaded.isdisjoint(HEAVY), sorted(loaded & set(HEAVY))
