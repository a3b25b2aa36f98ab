"""Repository-level pytest configuration: the plugin's own tests drive pytest through pytester.

The bundled suites (``suites/``) and benchmarks (``benchmarks/``) are not in
``testpaths``: suites run against a server (``pytest suites/ --infer-framework=...``),
benchmarks on demand (``pytest benchmarks/``).
"""

pytest_plugins = ["pytester"]
