"""Baseline comparison and regression rules: the answer to "may we upgrade?"."""
