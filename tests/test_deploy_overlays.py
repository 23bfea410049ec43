"""deploy/kubernetes as a team applies it: the base and its overlays, rendered, validated
against the Kubernetes schema (strict) and scanned by checkov, offline.

``production/`` is the example of what a team sets without editing the base
(namespace, image by digest, replicas by an autoscaler, resources, callers, the
Secret's name); ``fleet/`` makes the replicas a fleet. The memory model written
in the Deployment is checked against the figures ``make bench`` printed into
``docs/performance.md``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from ._kustomize import render
from .test_deploy import KUBERNETES_VERSION

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "deploy" / "kubernetes"
FOLDERS = {"base": BASE, "fleet": BASE / "fleet", "production": BASE / "production"}
CHECKOV_SECONDS = 300


def _by_key(objects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for o in objects:
        key = (o["kind"], o["metadata"]["name"])
        assert key not in found, f"two {key}"
        found[key] = o
    return found


@pytest.fixture(scope="module", params=sorted(FOLDERS))
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    name: str = request.param
    return name, render(FOLDERS[name])


def test_every_rendered_object_passes_the_strict_schema(
    rendered: tuple[str, list[dict[str, Any]]],
) -> None:
    name, objects = rendered
    for o in objects:
        try:
            kubernetes_validate.validate(o, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{name}: {o['kind']} {o['metadata']['name']}: {str(exc).splitlines()[0]}")


@pytest.fixture(scope="module")
def checkov(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One checkov run over every rendering (one folder each), offline; its JSON report."""
    root = tmp_path_factory.mktemp("rendered")
    for name, folder in FOLDERS.items():
        (root / name).mkdir()
        for i, o in enumerate(render(folder)):
            (root / name / f"{i:02d}-{o['kind'].lower()}.yaml").write_text(yaml.safe_dump(o))
    program = Path(sys.executable).with_name("checkov")
    done = subprocess.run(
        [
            str(program),
            "-d",
            str(root),
            "--framework",
            "kubernetes",
            "--skip-download",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=CHECKOV_SECONDS,
        env={"PATH": "/usr/bin:/bin", "HOME": str(root), "BC_SKIP_MAPPING": "TRUE"},
    )
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_checkov_finds_nothing(checkov: dict[str, Any]) -> None:
    """Every Kubernetes check of checkov passes on every rendering; a skip is annotated on
    its object with the reason."""
    results = checkov["results"]
    failed = [
        f"{c['file_path']}: {c['check_id']} {c['resource']}: {c['check_name']}"
        for c in results["failed_checks"]
    ]
    assert failed == []
    scanned = {c["file_path"].strip("/").split("/")[0] for c in results["passed_checks"]}
    assert scanned == set(FOLDERS), scanned  # every rendering was scanned
    assert checkov["summary"]["passed"] > 150, checkov["summary"]
    for skipped in results["skipped_checks"]:
        assert skipped["check_id"] in ("CKV_K8S_43", "CKV_K8S_8", "CKV_K8S_9"), skipped
        assert skipped["check_result"]["suppress_comment"].strip(), skipped
    production_skips = {
        c["check_id"]
        for c in results["skipped_checks"]
        if c["file_path"].strip("/").startswith("production/")
    }
    assert "CKV_K8S_43" not in production_skips  # the overlay pins the digest


@pytest.fixture(scope="module")
def production() -> dict[tuple[str, str], dict[str, Any]]:
    return _by_key(render(FOLDERS["production"]))


def test_production_sets_the_namespace_and_pins_the_image_by_digest(
    production: dict[tuple[str, str], dict[str, Any]],
) -> None:
    namespaces = {
        o["metadata"].get("namespace") for k, o in production.items() if k[0] != "Namespace"
    }
    assert namespaces == {"recs"} and ("Namespace", "recs") in production
    deployment = production[("Deployment", "pineapple")]
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert re.fullmatch(r"registry\.example\.com/recs/pineapple-py@sha256:[0-9a-f]{64}", image)
    # the base's skip of the digest check is gone once the digest is pinned
    assert "checkov.io/skip1" not in deployment["metadata"].get("annotations", {})


def test_production_replicas_belong_to_the_autoscaler(
    production: dict[tuple[str, str], dict[str, Any]],
) -> None:
    deployment = production[("Deployment", "pineapple")]
    hpa = production[("HorizontalPodAutoscaler", "pineapple")]["spec"]
    pdb = production[("PodDisruptionBudget", "pineapple")]["spec"]
    assert "replicas" not in deployment["spec"]  # an apply never resets the autoscaler's count
    assert hpa["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "pineapple",
    }
    assert hpa["minReplicas"] > pdb["minAvailable"]
    (metric,) = hpa["metrics"]
    assert (
        metric["resource"]["name"] == "cpu"
        and 0 < metric["resource"]["target"]["averageUtilization"] < 100
    )
    resources = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert (
        resources["requests"]["cpu"] == resources["limits"]["cpu"]
    )  # utilization of a whole request
    assert resources["requests"]["memory"] == resources["limits"]["memory"]


def test_callers_and_secrets_are_settings(
    production: dict[tuple[str, str], dict[str, Any]],
) -> None:
    ingress = production[("NetworkPolicy", "pineapple")]["spec"]["ingress"][0]["from"]
    labels = [
        rule["namespaceSelector"]["matchLabels"] for rule in ingress if "namespaceSelector" in rule
    ]
    assert {"pineapple.io/caller": "true"} in labels  # any namespace that labels itself
    assert {"kubernetes.io/metadata.name": "recs-frontend"} in labels  # the overlay's setting
    secret = production[("Secret", "recs-pineapple-secrets")]
    pod = production[("Deployment", "pineapple")]["spec"]["template"]["spec"]
    names = {v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert names == {secret["metadata"]["name"]}
    assert not any("valueFrom" in e for e in pod["containers"][0].get("env", []))


def _mib(pattern: str, text: str) -> int:
    match = re.search(pattern, text)
    assert match, pattern
    return int(match.group(1))


def test_the_memory_model_is_the_benchmarks() -> None:
    performance = (ROOT / "docs" / "performance.md").read_text()
    (row,) = [
        line for line in performance.splitlines() if line.startswith("| 14 | shared: PSS sum")
    ]
    deployment = (BASE / "deployment.yaml").read_text()
    workers = (ROOT / "docs" / "workers.md").read_text()
    pod = _mib(r"\| PASS \| (\d+) MiB", row)
    supervisor = _mib(r"supervisor (\d+) MiB", row)
    worker = _mib(r"median other (\d+) MiB", row)
    assert _mib(r"the pod +(\d+) MiB", deployment) == pod
    assert _mib(r"supervisor +(\d+) MiB", deployment) == supervisor
    assert _mib(r"each worker +(\d+) MiB", deployment) == worker
    assert _mib(r"\((\d+) vs \d+ MiB in the run", workers) == pod
    assert _mib(r"supervisor ~(\d+) MiB", workers) == supervisor
    assert _mib(r"each worker ~(\d+) MiB", workers) == worker
    (reload_row,) = [line for line in performance.splitlines() if "peak RSS / steady RSS" in line]
    peak = float(re.search(r"\| ([\d.]+)x \| PASS", reload_row).group(1))  # type: ignore[union-attr]
    assert f"at most {peak}x the steady state" in deployment
    doc = next(d for d in yaml.safe_load_all(deployment) if d)
    memory = doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"]
    assert memory.endswith("Gi") and int(memory[:-2]) * 1024 >= pod * peak
