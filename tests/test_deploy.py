"""deploy/: the Dockerfile and the Kubernetes manifests name only what the server has.

Every flag is parsed by the real ``pineapple`` argument parser, every probe path
is a route of the real app (and answers 200 on the example config), every port
and volume name lines up, the config path is where the ConfigMap is mounted,
and the example ConfigMap's config passes ``pineapple check --fetch``.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.routing import Route
from starlette.testclient import TestClient

import server
from pineapple.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def _manifests() -> dict[str, dict[str, Any]]:
    """Every Kubernetes object under deploy/kubernetes, by kind (one of each)."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            assert doc["kind"] not in found, f"two {doc['kind']} objects ({path.name})"
            found[doc["kind"]] = doc
    return found


@pytest.fixture(scope="module")
def k8s() -> dict[str, dict[str, Any]]:
    found = _manifests()
    assert {"Deployment", "Service", "ConfigMap"} <= set(found)
    return found


def _container(k8s: dict[str, dict[str, Any]]) -> dict[str, Any]:
    containers = k8s["Deployment"]["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    container: dict[str, Any] = containers[0]
    return container


def _serve_args(argv: list[str]) -> argparse.Namespace:
    """``argv`` (starting at ``pineapple``) parsed by the real CLI; fails on any unknown flag."""
    assert argv[0] == "pineapple" and argv[1] == "serve", argv
    try:
        return build_parser().parse_args(argv[1:])
    except SystemExit as exc:  # argparse's way of refusing a flag or a value
        pytest.fail(f"pineapple refuses {shlex.join(argv)}: exit {exc.code}")


def _dockerfile_cmd() -> list[str]:
    lines = (DEPLOY / "Dockerfile").read_text().splitlines()
    cmds = [line for line in lines if line.startswith("CMD ")]
    assert len(cmds) == 1
    cmd: list[str] = json.loads(cmds[0][4:])  # the exec form: a JSON array
    return cmd


def _port(addr: str) -> int:
    return int(addr.rsplit(":", 1)[1])


def test_the_deployment_command_parses_with_every_flag(k8s: dict[str, dict[str, Any]]) -> None:
    c = _container(k8s)
    args = _serve_args([*c["command"], *c["args"]])
    assert args.func.__name__ == "serve_command"
    assert "--workers" in c["args"] and c["args"][c["args"].index("--workers") + 1] == "auto"
    assert args.workers >= 1
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert _port(args.addr) == ports["http"]
    assert args.addr.startswith("0.0.0.0:")  # reachable from outside the pod


def test_the_dockerfile_runs_the_same_server(k8s: dict[str, dict[str, Any]]) -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert text.startswith("#") and "FROM python:3.11-slim" in text
    cmd = _dockerfile_cmd()
    args = _serve_args(cmd)
    assert args.config == "/etc/pineapple/config.json"
    assert cmd[cmd.index("--workers") + 1] == "auto"
    assert f"EXPOSE {_port(args.addr)}" in text
    deployment = _serve_args([*_container(k8s)["command"], *_container(k8s)["args"]])
    assert deployment.config == args.config and _port(deployment.addr) == _port(args.addr)


def test_every_path_the_dockerfile_copies_exists() -> None:
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY ") and "--from=" not in line:
            *sources, _dest = line.split()[1:]
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
    assert "pip wheel" in (DEPLOY / "Dockerfile").read_text()  # from pyproject.toml


def test_the_config_is_read_where_the_configmap_is_mounted(
    k8s: dict[str, dict[str, Any]],
) -> None:
    c = _container(k8s)
    args = _serve_args([*c["command"], *c["args"]])
    pod = k8s["Deployment"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    path = Path(args.config)
    mount = mounts[str(path.parent)]
    config_map = volumes[mount["name"]]["configMap"]
    assert config_map["name"] == k8s["ConfigMap"]["metadata"]["name"]
    assert path.name in k8s["ConfigMap"]["data"]


def test_shared_snapshots_live_on_a_memory_volume(k8s: dict[str, dict[str, Any]]) -> None:
    c = _container(k8s)
    args = _serve_args([*c["command"], *c["args"]])
    pod = k8s["Deployment"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mount = {m["mountPath"]: m for m in c["volumeMounts"]}[args.shared_dir]
    assert volumes[mount["name"]]["emptyDir"]["medium"] == "Memory"


def test_grace_period_outlasts_the_drain(k8s: dict[str, dict[str, Any]]) -> None:
    c = _container(k8s)
    args = _serve_args([*c["command"], *c["args"]])
    grace = k8s["Deployment"]["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    # SIGTERM: still accepting for the delay, then the drain; exit at most 2 s after it.
    assert grace > args.shutdown_delay_seconds + args.drain_seconds + 2
    assert args.shutdown_delay_seconds >= 5  # endpoints take seconds to drop a pod


def test_memory_is_requested_and_explained(k8s: dict[str, dict[str, Any]]) -> None:
    c = _container(k8s)
    assert c["resources"]["requests"]["memory"] == c["resources"]["limits"]["memory"]
    assert "Memory model" in (DEPLOY / "kubernetes" / "deployment.yaml").read_text()


def test_the_service_targets_the_named_container_port(k8s: dict[str, dict[str, Any]]) -> None:
    c = _container(k8s)
    names = {p["name"] for p in c["ports"]}
    labels = k8s["Deployment"]["spec"]["template"]["metadata"]["labels"]
    service = k8s["Service"]["spec"]
    assert service["selector"].items() <= labels.items()
    assert k8s["Deployment"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    for port in service["ports"]:
        assert port["targetPort"] in names


def test_probe_paths_are_routes_that_answer(k8s: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    c = _container(k8s)
    probes = {k: c[k] for k in ("startupProbe", "livenessProbe", "readinessProbe") if k in c}
    assert {"livenessProbe", "readinessProbe"} <= set(probes)
    assert probes["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
    names = {p["name"] for p in c["ports"]}
    config = tmp_path / "config.json"
    config.write_text(k8s["ConfigMap"]["data"]["config.json"])
    app = server.create_app(server.Config(config_path=config, watch=False))
    paths = {r.path for r in app.routes if isinstance(r, Route)}
    with TestClient(app) as client:
        for kind, probe in probes.items():
            get = probe["httpGet"]
            assert get["port"] in names, kind
            assert get["path"] in paths, f"{kind}: no route {get['path']}"
            assert client.get(get["path"]).status_code == 200, kind


def test_the_example_config_passes_check(
    k8s: dict[str, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.json"
    config.write_text(k8s["ConfigMap"]["data"]["config.json"])
    assert main(["check", str(config), "--fetch"]) == 0, capsys.readouterr()
