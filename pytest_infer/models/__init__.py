"""Built-in models that need no download."""
