"""``--workers auto``: the affinity mask capped by the cgroup CPU quota (fake cgroup files)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from server.cli._cli import add_serve_command
from server.cli._cpu_quota import CpuQuota, cgroup_quota, usable_cpus

from ..._serve import run_cli
from ..fakes import dump, items_resource, unified_config
from ..pod import PLUGIN

AFFINITY = len(os.sched_getaffinity(0))


def _cgroup(tmp_path: Path, files: dict[str, str], own: str = "0::/\n") -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    root.mkdir(exist_ok=True)
    self_cgroup = tmp_path / "self-cgroup"
    self_cgroup.write_text(own)
    return root, self_cgroup


@pytest.mark.parametrize(
    ("files", "want"),
    [
        ({"cpu.max": "200000 100000\n"}, CpuQuota(200000, 100000, "cpu.max")),
        ({"cpu.max": "150000 100000\n"}, CpuQuota(150000, 100000, "cpu.max")),
        ({"cpu.max": "max 100000\n"}, None),
        (
            {"cpu/cpu.cfs_quota_us": "300000\n", "cpu/cpu.cfs_period_us": "100000\n"},
            CpuQuota(300000, 100000, "cpu.cfs_quota_us"),
        ),
        ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
        ({}, None),
    ],
    ids=["v2", "v2-fraction", "v2-max", "v1", "v1-unlimited", "missing"],
)
def test_quota_is_read_from_v1_and_v2_files(
    tmp_path: Path, files: dict[str, str], want: CpuQuota | None
) -> None:
    assert cgroup_quota(*_cgroup(tmp_path, files)) == want


def test_a_two_cpu_limit_on_a_bigger_mask_gives_two_workers(tmp_path: Path) -> None:
    count = usable_cpus(*_cgroup(tmp_path, {"cpu.max": "200000 100000\n"}))
    assert count.cpus == min(2, AFFINITY)
    assert str(count) == (
        f"{count.cpus} (cgroup cpu.max 200000/100000, {AFFINITY} CPUs in affinity)"
    )


def test_a_fraction_of_a_cpu_rounds_up_to_one_worker(tmp_path: Path) -> None:
    assert usable_cpus(*_cgroup(tmp_path, {"cpu.max": "50000 100000\n"})).cpus == 1
    assert usable_cpus(*_cgroup(tmp_path, {"cpu.max": "0 100000\n"})).cpus == 1


def test_a_quota_above_the_mask_keeps_the_mask(tmp_path: Path) -> None:
    quota = f"{(AFFINITY + 3) * 100000} 100000\n"
    assert usable_cpus(*_cgroup(tmp_path, {"cpu.max": quota})).cpus == AFFINITY


@pytest.mark.parametrize(
    "files",
    [
        {"cpu.max": "lots 100000\n"},
        {"cpu.max": "200000 0\n"},
        {"cpu.max": "\x00\x01garbage"},
        {"cpu/cpu.cfs_quota_us": "many\n", "cpu/cpu.cfs_period_us": "100000\n"},
    ],
    ids=["v2-word", "v2-zero-period", "v2-binary", "v1-word"],
)
def test_garbage_is_ignored_and_said(tmp_path: Path, files: dict[str, str]) -> None:
    count = usable_cpus(*_cgroup(tmp_path, files))
    assert count.cpus == AFFINITY and count.quota is None
    assert count.reason.startswith(f"no cgroup CPU limit, {AFFINITY} CPUs in affinity; ignored ")


def test_the_own_cgroup_and_its_ancestors_count_the_tightest_wins(tmp_path: Path) -> None:
    # A host without a cgroup namespace: systemd's CPUQuota= sits on the service's slice.
    files = {
        "system.slice/cpu.max": "300000 100000\n",
        "system.slice/app.service/cpu.max": "max 100000\n",
        "other.slice/cpu.max": "100000 100000\n",  # not this process's: ignored
    }
    root, self_cgroup = _cgroup(tmp_path, files, own="0::/system.slice/app.service\n")
    assert cgroup_quota(root, self_cgroup) == CpuQuota(300000, 100000, "cpu.max")


def test_v1_inside_a_container_reads_the_mounted_root(tmp_path: Path) -> None:
    # Docker on cgroup v1: /proc/self/cgroup names the host path, the mount is the container's.
    files = {
        "cpu,cpuacct/cpu.cfs_quota_us": "200000\n",
        "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    }
    own = "4:cpu,cpuacct:/docker/0123abcd\n1:name=systemd:/docker/0123abcd\n"
    assert cgroup_quota(*_cgroup(tmp_path, files, own=own)) == CpuQuota(
        200000, 100000, "cpu.cfs_quota_us"
    )


def test_serve_logs_the_auto_decision(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    failing = items_resource("feed", "v1", fail=True)  # exits right after the decision
    path.write_bytes(dump(unified_config("v1", resources={"feed": failing}, recall_from="feed")))
    result = run_cli(
        "serve", str(path), "--addr", "127.0.0.1:0", "--plugin", PLUGIN, "--workers", "auto"
    )
    assert result.returncode == 1
    want = usable_cpus()
    assert f"--workers auto: {want.cpus} ({want.reason})" in result.stderr, result.stderr


def test_the_parsed_count_is_an_int_and_auto_keeps_its_reason() -> None:
    parser = argparse.ArgumentParser()
    add_serve_command(parser.add_subparsers())
    auto = parser.parse_args(["serve", "c.json", "--workers", "auto"])
    assert auto.workers == usable_cpus().cpus and isinstance(auto.workers, int)
    assert auto.workers_auto == usable_cpus()
    counted = parser.parse_args(["serve", "c.json", "--workers", "3"])
    assert (counted.workers, counted.workers_auto) == (3, None)
