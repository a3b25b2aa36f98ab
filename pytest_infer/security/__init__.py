"""Security: every route without the API key, what error answers disclose, one hostile request's
cost to the others.

Public API for the bundled suite and users' own security tests: the route probe (``discover``,
``probe_all``, ``RouteProbe``), the disclosure scan (``scan_body``, ``scan_headers``, ``Leak``), the
stall measurement (``measure``, ``HOSTILE``, ``StallLimits``) and the suite's table.
"""

from __future__ import annotations

from .._lazy import exports

_NAMES = {
    "discover": "routes",
    "probe_all": "routes",
    "last_answered_before_silence": "routes",
    "RouteProbe": "routes",
    "PROTECTED": "routes",
    "scan_body": "disclosure",
    "scan_headers": "disclosure",
    "Leak": "disclosure",
    "environment_secrets": "disclosure",
    "sent_strings": "disclosure",
    "measure": "stall",
    "HOSTILE": "stall",
    "StallLimits": "stall",
    "response_format": "stall",
    "SecurityTable": "table",
}
__getattr__, __dir__ = exports(__name__, _NAMES)
__all__ = list(_NAMES)
