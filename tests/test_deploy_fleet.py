"""deploy/kubernetes/fleet: the overlay that turns the replicas into a fleet, checked as rendered.

The base's ``kustomization.yaml`` names every object file of the base; the
overlay adds the producer (two replicas, a PDB, its NetworkPolicy) and patches
the serving Deployment (``--fleet``, ``--fleet-cache`` on an emptyDir) and its
NetworkPolicy (egress to NATS). The overlay is rendered here as kustomize
renders it (its ``resources`` and its JSON 6902 ``add`` patches), and every
object is validated against the Kubernetes schema; every command line is
parsed by the real ``pineapple`` parser.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from pineapple.cli import build_parser

from ._kustomize import kustomization, render
from .test_deploy import KUBERNETES_VERSION, assert_restricted

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "deploy" / "kubernetes"
FLEET = BASE / "fleet"


@pytest.fixture(scope="module")
def fleet() -> dict[tuple[str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"]["name"]): o for o in render(FLEET)}


def _args(deployment: dict[str, Any], command: str) -> argparse.Namespace:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    argv = [*container["command"], *container["args"]]
    assert argv[:2] == ["pineapple", command], argv
    try:
        return build_parser().parse_args(argv[1:])
    except SystemExit as exc:
        pytest.fail(f"pineapple refuses {shlex.join(argv)}: exit {exc.code}")


def test_the_base_kustomization_names_every_object_file_of_the_base() -> None:
    listed = set(kustomization(BASE)["resources"])
    files = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == files


def test_every_rendered_object_passes_the_kubernetes_schema(
    fleet: dict[tuple[str, str], dict[str, Any]],
) -> None:
    for (kind, name), doc in fleet.items():
        try:
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{kind} {name}: {str(exc).splitlines()[0]}")
        if kind != "Namespace":
            assert doc["metadata"]["namespace"] == "pineapple", (kind, name)


def test_the_pods_follow_the_fleet_from_a_cache_on_an_emptydir(
    fleet: dict[tuple[str, str], dict[str, Any]],
) -> None:
    pods = fleet[("Deployment", "pineapple")]
    args = _args(pods, "serve")
    assert args.fleet.startswith("nats://") and args.fleet_cache
    spec = pods["spec"]["template"]["spec"]
    mounts = {m["mountPath"]: m["name"] for m in spec["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert "emptyDir" in volumes[mounts[args.fleet_cache]]
    assert_restricted(spec)


def test_the_producer_runs_two_replicas_one_evicted_at_a_time(
    fleet: dict[tuple[str, str], dict[str, Any]],
) -> None:
    producer = fleet[("Deployment", "pineapple-producer")]
    pods = fleet[("Deployment", "pineapple")]
    args = _args(producer, "publish")
    assert args.fleet == _args(pods, "serve").fleet  # one store
    assert producer["spec"]["replicas"] == 2
    labels = producer["spec"]["template"]["metadata"]["labels"]
    pdb = fleet[("PodDisruptionBudget", "pineapple-producer")]["spec"]
    assert pdb["minAvailable"] == 1 and pdb["selector"]["matchLabels"].items() <= labels.items()
    spec = producer["spec"]["template"]["spec"]
    assert_restricted(spec)
    # the config it publishes is the one the ConfigMap mounts, as for the pods
    mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
    assert Path(args.config).parent == Path(mounts["config"])
    # its workdir is writable (the root filesystem is not)
    assert Path(args.workdir) == Path(mounts["work"])


def test_only_the_egress_each_side_needs(fleet: dict[tuple[str, str], dict[str, Any]]) -> None:
    def egress(name: str) -> set[int]:
        policy = fleet[("NetworkPolicy", name)]["spec"]
        return {p["port"] for rule in policy["egress"] for p in rule["ports"]}

    assert egress("pineapple-producer") == {53, 3306, 4222}  # DNS, its sources, NATS
    assert egress("pineapple") == {53, 3306, 6379, 4222}  # the base's, and NATS
    assert fleet[("NetworkPolicy", "pineapple-producer")]["spec"]["ingress"] == []


def test_the_overlay_names_nats_as_a_dependency_from_its_own_chart() -> None:
    text = (FLEET / "kustomization.yaml").read_text()
    assert "helm install nats nats/nats" in text and "jetstream.enabled=true" in text
