"""How many CPUs this process may use: its affinity mask, capped by its cgroup CPU quota.

``--workers auto`` starts one worker per CPU. Counting the affinity mask
alone is wrong in a container: a Kubernetes pod with ``limits.cpu: 2`` on a
64-core node sees 64 CPUs in its mask, but the kernel's CFS quota lets it run
only 2 CPUs' worth of time; 64 workers would hold 64 heaps and thrash. So the
count is ``min(affinity, ceil(quota / period))``, at least 1, where the quota
is read from the cgroup filesystem:

- cgroup v2: ``cpu.max`` holds ``"<quota> <period>"`` or ``"max <period>"`` (no limit);
- cgroup v1: ``cpu/cpu.cfs_quota_us`` (``-1``: no limit) and ``cpu/cpu.cfs_period_us``.

Each is looked up at the cgroup root (a container's own cgroup, with a
cgroup namespace or a v1 bind mount) and in this process's cgroup and its
ancestors as ``/proc/self/cgroup`` names them (a systemd ``CPUQuota=`` on a
host); the tightest limit wins. A file that is missing, unreadable or not in
the kernel's format is skipped: the count falls back to the affinity mask,
and :attr:`CpuCount.reason` says why. The root and the ``/proc/self/cgroup``
path are parameters, so a test points them at fake files.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CGROUP_ROOT", "SELF_CGROUP", "CpuCount", "CpuQuota", "cgroup_quota", "usable_cpus"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
"""Where the cgroup filesystem is mounted."""
SELF_CGROUP = Path("/proc/self/cgroup")
"""This process's cgroup path in each hierarchy (``0::/path`` for v2)."""
_MAX_READ_BYTES = 4096
"""The files read here are one short line (``/proc/self/cgroup``: one line per hierarchy)."""
_MAX_DEPTH = 64
"""Ancestors looked at above this process's cgroup (real paths are a few levels deep)."""


@dataclass(frozen=True)
class CpuQuota:
    """A CFS quota: ``quota`` microseconds of CPU time per ``period`` microseconds."""

    quota: int
    period: int
    source: str
    """The file it was read from, as shown in the log (``cpu.max``, ``cpu.cfs_quota_us``)."""

    @property
    def cpus(self) -> int:
        """Whole CPUs the quota allows (rounded up: 1.5 CPUs' worth is 2 busy workers)."""
        return max(1, math.ceil(self.quota / self.period))


@dataclass(frozen=True)
class CpuCount:
    """What ``--workers auto`` decided, and why (see the module's docstring)."""

    cpus: int
    affinity: int
    quota: CpuQuota | None
    skipped: tuple[str, ...] = ()
    """Quota files that exist but could not be used, each with its reason."""

    @property
    def reason(self) -> str:
        """``cgroup cpu.max 200000/100000, 8 CPUs in affinity`` and the like."""
        if self.quota is None:
            limit = "no cgroup CPU limit"
        else:
            limit = f"cgroup {self.quota.source} {self.quota.quota}/{self.quota.period}"
        skipped = "".join(f"; ignored {s}" for s in self.skipped)
        return f"{limit}, {self.affinity} CPUs in affinity{skipped}"

    def __str__(self) -> str:
        return f"{self.cpus} ({self.reason})"


def _affinity() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _read(path: Path) -> str | None:
    """The start of a small file's text; None when it does not exist or cannot be read."""
    try:
        with open(path, "rb") as source:
            return source.read(_MAX_READ_BYTES).decode("ascii", "replace")
    except OSError:
        return None


def _own_paths(self_cgroup: Path) -> dict[str, str]:
    """``controller -> cgroup path`` of this process (``""`` for the v2 unified hierarchy)."""
    text = _read(self_cgroup) or ""
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(","):
                paths[controller] = parts[2]
    return paths


def _dirs(base: Path, own: str | None) -> list[Path]:
    """``base``, then this process's cgroup under it and each ancestor that exists."""
    found = [base]
    parts = [p for p in (own or "").split("/") if p and p != ".."][:_MAX_DEPTH]
    for depth in range(len(parts), 0, -1):
        path = base.joinpath(*parts[:depth])
        if path.is_dir():
            found.append(path)
    return found


def _v2(directory: Path, skipped: list[str]) -> CpuQuota | None:
    text = _read(directory / "cpu.max")
    if text is None:
        return None
    fields = text.split()
    if len(fields) == 2 and fields[0] == "max":
        return None
    if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit() and int(fields[1]) > 0:
        return CpuQuota(int(fields[0]), int(fields[1]), "cpu.max")
    skipped.append(f"{directory / 'cpu.max'} ({text.strip()[:40]!r})")
    return None


def _v1(directory: Path, skipped: list[str]) -> CpuQuota | None:
    quota_text = _read(directory / "cpu.cfs_quota_us")
    period_text = _read(directory / "cpu.cfs_period_us")
    if quota_text is None or period_text is None:
        return None
    quota, period = quota_text.strip(), period_text.strip()
    if quota == "-1":
        return None
    if quota.isdigit() and period.isdigit() and int(period) > 0:
        return CpuQuota(int(quota), int(period), "cpu.cfs_quota_us")
    skipped.append(f"{directory / 'cpu.cfs_quota_us'} ({quota[:20]!r}/{period[:20]!r})")
    return None


def cgroup_quota(
    root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP, skipped: list[str] | None = None
) -> CpuQuota | None:
    """The tightest CPU quota of this process's cgroups under ``root`` (None: no limit).

    Files that exist but are not in the kernel's format are appended to ``skipped``.
    """
    skipped = [] if skipped is None else skipped
    own = _own_paths(self_cgroup)
    quotas = [q for d in _dirs(root, own.get("")) if (q := _v2(d, skipped)) is not None]
    for name in ("cpu", "cpu,cpuacct"):
        base = root / name
        if base.is_dir():
            quotas += [q for d in _dirs(base, own.get("cpu")) if (q := _v1(d, skipped)) is not None]
            break  # the two names are one hierarchy (one is a symlink to the other)
    return min(quotas, key=lambda q: q.quota / q.period, default=None)


def usable_cpus(root: Path = CGROUP_ROOT, self_cgroup: Path = SELF_CGROUP) -> CpuCount:
    """``min(affinity, ceil(quota / period))``, at least 1: the ``--workers auto`` count."""
    affinity = _affinity()
    skipped: list[str] = []
    quota = cgroup_quota(root, self_cgroup, skipped)
    cpus = affinity if quota is None else min(affinity, quota.cpus)
    return CpuCount(max(1, cpus), affinity, quota, tuple(skipped))
