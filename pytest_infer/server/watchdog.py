"""Stops a server's process tree when the pytest process that owns it disappears.

Run as ``python -m pytest_infer.server.watchdog OWNER_PID SERVER_PID`` in a session
of its own, so that even ``kill -9`` of pytest leaves no server behind.
"""

from __future__ import annotations

import sys
import time

import psutil

from .process import running, terminate_tree


def main(owner_pid: int, server_pid: int, poll: float = 0.5) -> None:
    try:
        server = psutil.Process(server_pid)
    except psutil.Error:
        return
    while running(server):
        if not running(owner_pid):  # also when the owner died before we looked
            terminate_tree(server_pid, grace=10)
            return
        time.sleep(poll)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
