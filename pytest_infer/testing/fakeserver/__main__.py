"""``python -m pytest_infer.testing.fakeserver --port P [--fault NAME]``."""

from .server import main

main()
