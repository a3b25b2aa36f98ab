"""HTTP access to the server under test: raw httpx, SSE, and curl reproducers."""
