"""``SharedValueReplay``: a refreshed shared value of a ``replay`` entry, replayed by a trial.

In one process (and in a worker, for its own resources) a refreshed value of
a ``"replay": true`` entry answers the sample with the serving engine before
it swaps in (``server/_value_replay.py``). Under ``--workers N`` a shared
value (its type has a codec) is fetched and published by the supervisor,
which has no engine; so its publisher Manager's replay check
(``Manager.set_replay``, given through ``start_publisher``) asks a process
that has one:

- the value is already *staged* when the check runs: the publishing fetcher
  wrote its files to the store under a generation the manifest does not
  name (``_publishing.py``), so no worker maps it; :meth:`check` finds where
  (``PublishingFetcher.staged_of``);
- a trial process (``server/workers/worker/_value_trial.py``, run by
  ``run_trial`` as a config's trial is) builds the serving config as a worker
  does, opens the staged files, and replays the pod's request sample
  (``server/workers/_sample_channel.py``) with the candidate lent in place of
  the live value, counting only the failures the live value does not have;
- the check raises with the trial's reason when it refuses: the Manager
  refuses the value like a validator (``Valid=False``, check ``replay``; an
  admin refresh answers 422 with the replay's summary), the fetcher discards
  the staged files, and the old value keeps serving on every worker. A value
  that passes is committed (named in the manifest) as any other.

Why a trial process rather than a worker: a worker serves live traffic (a
replay would take its CPU and slots, and its engine would need the candidate
lent across processes), and the trial's build is the one the config reload
trusts already (the same code, bounds and cleanup). The price is a new
interpreter and a build of the serving config per replayed refresh: seconds
of one core, for values that refresh every few minutes or more.

Nothing is replayed (the value is accepted) with ``--replay-seconds 0`` or an
empty pod sample; a first load has nothing to compare with (the Manager does
not ask). A trial that cannot answer (the serving config does not build, the
trial is killed at its bound) refuses the value with that reason: a value is
published only once something answered with it. Once the supervisor is
stopping, the value is refused (nothing is published during a shutdown).

Bounds: one value trial at a time (``_lock``, waited for at most one trial's
bound, then refused as busy); a trial is killed after
``max(start_timeout, build_timeout_seconds) + TRIAL_SPAWN_SECONDS +
replay_seconds``; the sample is collected within ``COLLECT_SECONDS``.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from ..._build_error import BuildError
from ..._config import Config
from .._sample_channel import collect_sample
from ..worker._value_trial import value_trial_main
from ._publishing import PublishingFetcher, SharedStore
from ._trial import TRIAL_SPAWN_SECONDS, run_trial

__all__ = ["SharedValueReplay"]

_log = logging.getLogger("pineapple.server")


class SharedValueReplay:
    """The supervisor's replay check of shared values (see the module docs)."""

    def __init__(self, config: Config, store: SharedStore, stopping: threading.Event) -> None:
        self._config = config
        self._store = store
        self._stopping = stopping
        self._lock = threading.Lock()
        self.limit = (
            max(config.start_timeout, config.build_timeout_seconds)
            + TRIAL_SPAWN_SECONDS
            + config.replay_seconds
        )
        """How long one value trial may run before it is killed."""

    def checker(self, made: list[PublishingFetcher]) -> Callable[[str, Any], None]:
        """The check of one publisher Manager, whose fetchers are ``made``."""
        return functools.partial(self.check, made)

    def check(self, made: list[PublishingFetcher], name: str, value: Any) -> None:
        """Replay the pod's sample with the staged ``value`` of ``name``; ``ValueError`` with
        the reason to refuse it."""
        config = self._config
        if config.replay_seconds <= 0 or config.replay_sample_requests <= 0:
            return
        # Bounded: one fetcher per shared entry of the config.
        staged = next((s for f in made if (s := f.staged_of(value)) is not None), None)
        if staged is None:
            raise ValueError("its staged snapshot was not found, so it could not be replayed")
        sample = collect_sample(config, self._store.path)
        if not sample:
            return
        if not self._lock.acquire(timeout=self.limit):
            raise ValueError(f"another shared value's replay ran for over {self.limit:g}s")
        try:
            if self._stopping.is_set():
                raise ValueError("not replayed: the supervisor is shutting down")

            def args(reply: Connection) -> tuple[Any, ...]:
                candidate = (staged.stem, staged.generation)
                return (config, str(self._store.path), name, candidate, reply, os.getpid(), sample)

            reply = run_trial(value_trial_main, args, self.limit, self._stopping)
        except BuildError as exc:  # no answer in time, or the trial died
            raise ValueError(f"the replay trial did not answer: {exc.reason}") from None
        finally:
            self._lock.release()
        if reply is None:
            raise ValueError("not replayed: the supervisor is shutting down")
        if reply.get("ok") is not True:
            raise ValueError(str(reply.get("reason")))
        report = reply.get("report")
        if isinstance(report, dict):
            _log.info(
                "resource %r: the refreshed value answered %s replayed requests in a trial "
                "(%s skipped, %s failed on the live value too)",
                name,
                report.get("replayed"),
                report.get("skipped"),
                report.get("failed_live_too"),
            )
