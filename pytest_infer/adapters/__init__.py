"""Framework adapters: one module per framework behind the protocol in ``base``."""
