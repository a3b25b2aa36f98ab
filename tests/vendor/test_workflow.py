"""The weekly vendor-watch workflow: one watch job per engine, then one job that stores the histories and deploys
the site (actionlint runs on every workflow in tests/reporting/test_workflows.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from pytest_infer.vendor.engines import ENGINES

FLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "vendor-watch.yml"


def test_each_engine_is_watched_weekly_and_the_site_is_deployed():
    flow = yaml.safe_load(FLOW.read_text())
    assert flow[True]["schedule"][0]["cron"].endswith(
        "* * 1"
    )  # yaml reads the key "on" as True; Mondays
    watch, publish = flow["jobs"]["watch"], flow["jobs"]["publish"]
    assert sorted(watch["strategy"]["matrix"]["engine"]) == sorted(ENGINES)
    assert any('pytest-infer watch "$ENGINE"' in s.get("run", "") for s in watch["steps"])
    runs = " ".join(s.get("run", "") for s in publish["steps"])
    assert "pytest-infer site infer-report/site" in runs and "git push" in runs
    assert publish["needs"] == "watch" and publish["permissions"]["pages"] == "write"
    assert any(str(s.get("uses", "")).startswith("actions/deploy-pages") for s in publish["steps"])
