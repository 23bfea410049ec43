"""A server's process tree (root and every descendant): memory by kind, CPU seconds."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import psutil

__all__ = ["Memory", "cpu_seconds", "memory", "processes"]

_KINDS = {"Pss": "pss", "Pss_Anon": "anon", "Pss_File": "file", "Pss_Shmem": "shmem"}


@dataclass(frozen=True)
class Memory:
    """PSS bytes of one process (or a sum), split by what backs the pages."""

    pss: int = 0
    anon: int = 0
    """Private heap, stacks, Python objects: what each process builds for itself."""
    file: int = 0
    """Mapped files (the interpreter, extension modules; shares across processes)."""
    shmem: int = 0
    """tmpfs / shared memory (the /dev/shm snapshots): one copy, split between mappers."""

    def __add__(self, other: Memory) -> Memory:
        return Memory(*(a + b for a, b in zip(self.fields(), other.fields(), strict=True)))

    def fields(self) -> tuple[int, int, int, int]:
        return (self.pss, self.anon, self.file, self.shmem)

    def mib(self) -> str:
        m = 2**20
        return (
            f"{self.pss / m:.0f} MiB (anon {self.anon / m:.0f}, file {self.file / m:.0f}, "
            f"shmem {self.shmem / m:.0f})"
        )


def processes(pid: int) -> list[psutil.Process]:
    """``pid`` and every live descendant."""
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


def memory(pid: int) -> Memory:
    """The PSS of one process from ``/proc/PID/smaps_rollup`` (zero if it is gone).

    Bounded: smaps_rollup is a few dozen lines.
    """
    values = dict.fromkeys(_KINDS.values(), 0)
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return Memory()
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in _KINDS:
            values[_KINDS[key]] = int(rest.split()[0]) * 1024
    return Memory(**values)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and its live descendants."""
    total = 0.0
    for proc in processes(pid):
        try:
            t = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        total += t.user + t.system
    return total
