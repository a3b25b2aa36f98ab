"""One TLS context for every HTTP client the plugin makes: httpx builds a context per client by
reading the CA bundle (about 50 ms of CPU each), and the suites make a client per check."""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def tls() -> ssl.SSLContext:
    """The context httpx would build by default (certifi's bundle,
    ``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured).
    """
    return httpx.create_ssl_context()
