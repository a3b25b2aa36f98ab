"""The object that owns a pytest-infer run, kept in ``config.stash``.

Loading this module (the suites' plugins do, for ``session_key``) imports none of the machinery a
session uses: ``create`` does, so that a pytest run that tests no server pays nothing for it.
"""

from __future__ import annotations

import functools
import json
import uuid
from typing import TYPE_CHECKING, Any

import pytest

from . import __version__

if TYPE_CHECKING:
    from .client.endpoint import Endpoint
    from .options import InferOptions
    from .results.model import SessionResults
    from .server.pool import ServerInfo, ServerPool
    from .suite import Suite
    from .targets import Target

WORKER_SERVERS_KEY = "pytest_infer_servers"
WORKER_RESULTS_KEY = "pytest_infer_results"


class InferSession:
    """The state of one run: not a value but the one object its hooks and fixtures share. ``pool``
    and ``results`` are made on first use: a run that tests no server (most pytest runs where the
    plugin is installed) never loads the server and results machinery."""

    def __init__(
        self,
        options: InferOptions,
        targets: list[Target],
        suites: dict[str, Suite],
        *,
        is_worker: bool = False,
    ) -> None:
        self.options, self.targets, self.suites, self.is_worker = (
            options,
            targets,
            suites,
            is_worker,
        )
        self.failed_targets: set[str] = set()  # start failures already reported once
        # suite name -> its gate settings, parsed once by its plugin; the gate hands them to its
        # table (Pairing.settings)
        self.settings: dict[str, Any] = {}
        # labelled values a suite's plugin sets on every target of this session
        # (TargetRecord.variant)
        self.variant: dict[str, str] = {}
        # reporting.outputs.Written, once the controller has written the reports
        self.written: Any = None
        # this pytest run, shared by its xdist workers: what the gate learns "same session" from
        self.id = ""

    @classmethod
    def create(
        cls,
        config: pytest.Config,
        options: InferOptions,
        targets: list[Target],
        suites: dict[str, Suite],
    ) -> InferSession:
        workerinput = getattr(config, "workerinput", None)
        session = cls(options, targets, suites, is_worker=workerinput is not None)
        session.id = str((workerinput or {}).get("testrunuid") or uuid.uuid4().hex)
        # the controller writes the results of a session that tests a server
        if workerinput is None and targets:
            # lazy: this module loads in every pytest run; this only in a session that tests a
            # server
            from .results.environment import capture_environment

            session.results.environment = capture_environment(config.rootpath, __version__)
        if workerinput is not None and WORKER_SERVERS_KEY in workerinput:
            session.pool.provide(json.loads(workerinput[WORKER_SERVERS_KEY]))
        return session

    @functools.cached_property
    def pool(self) -> ServerPool:
        # lazy: this module loads in every pytest run; this only in a session that tests a server
        from .server.pool import ServerPool

        return ServerPool(self.options, self.targets, owner=not self.is_worker)

    @functools.cached_property
    def results(self) -> SessionResults:
        # lazy: this module loads in every pytest run; this only in a session that tests a server
        from .results.model import SessionResults

        results = SessionResults(suites=self.suites)
        results.plugin_version = __version__
        return results

    def stop_servers(self) -> None:
        """Stops every server this session started; a session that made no pool has none."""
        if "pool" in self.__dict__:
            self.pool.stop_all()

    def servers(self) -> dict[str, ServerInfo]:
        """Every target's server, started side by side (what an xdist controller hands its
        workers).
        """
        self.pool.start_all([t.id for t in self.targets])
        return {t.id: self.server(t.id) for t in self.targets}

    def server(self, target_id: str) -> ServerInfo:
        # lazy: this module loads in every pytest run; this only in a session that tests a server
        from .results.model import TargetRecord

        info = self.pool.get(target_id)
        self.results.targets.setdefault(
            target_id,
            TargetRecord.of(
                target_id,
                info,
                variant=dict(self.variant),
                start_seconds=info.start_seconds,
                error=info.error,
            ),
        )
        return info

    def record_crashes(self) -> bool:
        """Put the deaths of the servers this process owns on their targets' records (results.json);
        whether any died."""
        if "pool" not in self.__dict__:
            return False
        self.pool.record_last_deaths()
        for target_id, crashes in self.pool.crashes.items():
            if target_id in self.results.targets:
                self.results.targets[target_id].crashes = list(crashes)
        return any(self.pool.crashes.values())

    def endpoint(self, info: ServerInfo) -> Endpoint:
        return self.pool.endpoint(info)


session_key = pytest.StashKey[InferSession]()


def tests_a_server(config: pytest.Config) -> bool:
    """Whether this run tests a server: a suite's plugin reads what only such a session needs then,
    and leaves the other pytest runs where the plugin is installed alone."""
    session = config.stash.get(session_key, None)
    return session is not None and bool(session.targets)
