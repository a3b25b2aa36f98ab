"""Vendor regression tracking as a service: each release of an engine judged as it ships
(``watch``), the first bad release of a check found by halving (``bisect``), a drafted upstream
report per regression (``drafts``), and the stored histories published as a static site (``site``).

It sits on top of the comparison stack: every verdict between two releases is the gate's own
``compare`` (through ``reporting.history.build_history`` along a release line), never a comparison
of its own. It runs engines only as child processes (``scripts/install-engines.sh``, ``pytest``) and
imports no part of the run.
"""
