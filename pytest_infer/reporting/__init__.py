"""Renderings of the one results model."""
