"""``--pin-cpus``: each serving process runs on one CPU of those it may use.

A serving process's Python work is serialised by the GIL, so its threads gain
nothing from running on several CPUs at once; they lose a lot when they do.
A pipeline with blocking operators runs each request on a pool thread, and
every wake-up of such a thread (an I/O reply, a sleep's end) hands the GIL
across CPUs: a futex wake-up, a context switch and cold caches on each side.
On this project's 2-CPU benchmark machine (``realistic_for_you_calibrated``
without its CPU stubs) one process did about 120 context switches a request
spread over both CPUs and 19 pinned to one, and spent half the CPU time per
request pinned.

:func:`cpu_for` picks the CPU of a process: worker ``index`` takes the
``index``-th CPU of the process's affinity mask, round robin (one process:
the first). :func:`pin_process` moves every thread the process has to it;
threads started later inherit the mask of the thread that starts them.

Opt-in, because it is right only where the CPUs are the pod's own (a
Kubernetes Guaranteed pod under the static CPU manager policy, a dedicated
machine): under a CFS quota alone, every pod on the node sees the same CPUs,
and pinned pods would crowd onto the first ones. It also confines work that
releases the GIL (Lua, which lupa runs without it; compression) to one CPU.

Bounds: one ``sched_setaffinity`` call per thread of the process (those
listed in ``/proc/self/task`` once).
"""

from __future__ import annotations

import logging
import os

__all__ = ["cpu_for", "pin_process"]

_log = logging.getLogger("pineapple.server")


def cpu_for(index: int) -> int | None:
    """The CPU of serving process ``index`` (0 for a single process); None where this
    platform sets no affinity."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[index % len(cpus)]


def pin_process(cpu: int, who: str) -> bool:
    """Run every thread of this process on ``cpu``; False (logged) where it cannot be.

    ``who``: the process, as the log names it (``worker 1``).
    """
    try:
        tasks = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tasks = [0]
    try:
        for tid in tasks:  # bounded: the threads this process has now
            try:
                os.sched_setaffinity(tid, {cpu})
            except ProcessLookupError:  # the thread ended meanwhile
                continue
    except (OSError, ValueError) as exc:
        _log.warning("%s: not pinned to CPU %d: %s", who, cpu, exc)
        return False
    _log.info("%s pinned to CPU %d", who, cpu)
    return True
