"""Hooks pytest-infer adds to pytest, for users' conftest files and plugins."""

from __future__ import annotations


def pytest_infer_suites():
    """Return a list of ``pytest_infer.Suite`` to register for this session, beside the installed
    ones (entry points of the group ``pytest_infer.suites``). A suite whose module is a conftest
    needs no ``plugin``: the conftest holds its fixtures."""
