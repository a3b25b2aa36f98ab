"""pytest-infer: test LLM inference servers like any other software.

Kept import-free on purpose: the tiny-model builder runs as a script under engine
interpreters that do not have this package's dependencies.
"""
__version__ = "0.1.0"
