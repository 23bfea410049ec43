"""deploy/: the Dockerfile and the Kubernetes manifests name only what the server has.

Every flag is parsed by the real ``pineapple`` argument parser, every probe path
is a route of the real app (and answers 200 on the example config), every port
and volume name lines up, the config path is where the ConfigMap is mounted,
and the example ConfigMap's config passes ``pineapple check --fetch``.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
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
            if doc["kind"] == "Kustomization":  # kustomize's list of these files, no object
                continue
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


# -- a security review: the schema, the restricted profile, secrets, policies ------------

KUBERNETES_VERSION = "1.30"  # the oldest minor still in wide use that knows every field here


def _pod(k8s: dict[str, dict[str, Any]]) -> dict[str, Any]:
    pod: dict[str, Any] = k8s["Deployment"]["spec"]["template"]["spec"]
    return pod


def _template_labels(k8s: dict[str, dict[str, Any]]) -> dict[str, str]:
    labels: dict[str, str] = k8s["Deployment"]["spec"]["template"]["metadata"]["labels"]
    return labels


def test_every_manifest_passes_the_kubernetes_schema(k8s: dict[str, dict[str, Any]]) -> None:
    assert {"Namespace", "Secret", "PodDisruptionBudget", "NetworkPolicy"} <= set(k8s)
    for kind, doc in k8s.items():
        try:  # strict: an unknown or misspelt field fails too
            kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{kind}: {str(exc).splitlines()[0]}")


def test_every_object_lives_in_a_namespace_that_enforces_restricted(
    k8s: dict[str, dict[str, Any]],
) -> None:
    namespace = k8s["Namespace"]["metadata"]
    assert namespace["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for kind, doc in k8s.items():
        if kind != "Namespace":
            assert doc["metadata"]["namespace"] == namespace["name"], kind


def test_the_pod_meets_the_restricted_profile(k8s: dict[str, dict[str, Any]]) -> None:
    assert_restricted(_pod(k8s))


def assert_restricted(pod: dict[str, Any]) -> None:
    """``pod`` (a pod template's spec) meets the "restricted" Pod Security profile."""
    assert pod["automountServiceAccountToken"] is False
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        assert not pod.get(host), host
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    # The image's own user is the pod's (and not root): the Dockerfile says USER 10001.
    user = pod["securityContext"]["runAsUser"]
    assert user > 0 and f"USER {user}" in (DEPLOY / "Dockerfile").read_text()
    for container in pod["containers"] + pod.get("initContainers", []):
        sc = container["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["readOnlyRootFilesystem"] is True
        assert not sc.get("privileged", False)
        assert sc["capabilities"]["drop"] == ["ALL"] and not sc["capabilities"].get("add")
        assert sc.get("runAsNonRoot", True) is True
        assert sc.get("seccompProfile", {"type": "RuntimeDefault"})["type"] == "RuntimeDefault"
        assert not any("hostPort" in port for port in container.get("ports", []))
    allowed = {"configMap", "emptyDir", "secret", "projected", "downwardAPI"}
    for volume in pod["volumes"]:
        assert set(volume) - {"name"} <= allowed, volume  # no hostPath


def test_every_writable_place_is_an_emptydir(k8s: dict[str, dict[str, Any]]) -> None:
    c = _container(k8s)
    args = _serve_args([*c["command"], *c["args"]])
    volumes = {v["name"]: v for v in _pod(k8s)["volumes"]}
    writable = {m["mountPath"]: m["name"] for m in c["volumeMounts"] if not m.get("readOnly")}
    assert writable, "a read-only root filesystem needs somewhere to write"
    for path, name in writable.items():
        assert "emptyDir" in volumes[name], path
    # --workers keeps its shared snapshots in memory; Python's temporary files go to /tmp.
    assert volumes[writable[args.shared_dir]]["emptyDir"]["medium"] == "Memory"
    assert "/tmp" in writable


def test_disruptions_and_placement_keep_a_replica_serving(
    k8s: dict[str, dict[str, Any]],
) -> None:
    labels = _template_labels(k8s)
    replicas = k8s["Deployment"]["spec"]["replicas"]
    pdb = k8s["PodDisruptionBudget"]["spec"]
    assert pdb["selector"]["matchLabels"].items() <= labels.items()
    assert 1 <= pdb["minAvailable"] < replicas  # a drain may evict one, never all
    spread = {s["topologyKey"]: s for s in _pod(k8s)["topologySpreadConstraints"]}
    by_node = spread["kubernetes.io/hostname"]
    assert by_node["whenUnsatisfiable"] == "DoNotSchedule" and by_node["maxSkew"] == 1
    for constraint in spread.values():
        assert constraint["labelSelector"]["matchLabels"].items() <= labels.items()


def _variables(text: str) -> set[str]:
    return set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}", text))


def test_every_variable_of_the_production_flow_is_set_and_secrets_come_from_the_secret(
    k8s: dict[str, dict[str, Any]],
) -> None:
    production = (ROOT / "configs" / "production.json").read_text()
    flow = (ROOT / "configs" / "production_flow.py").read_text()
    wanted = _variables(production)
    assert wanted <= _variables(flow) and {"FEED_MYSQL_DSN", "REDIS_PASSWORD"} <= wanted
    container = _container(k8s)
    env = {e["name"]: e for e in container["env"]}
    secret = k8s["Secret"]
    keys = set(secret["stringData"])
    assert wanted <= set(env) | keys, f"not set: {sorted(wanted - set(env) - keys)}"
    # No secret reaches the process as a variable (checkov CKV_K8S_35): the Secret is a
    # volume, and --secrets-dir reads its files where the environment has no value.
    assert not any("valueFrom" in e for e in container["env"])
    args = _serve_args([*container["command"], *container["args"]])
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in _pod(k8s)["volumes"]}
    mount = mounts[args.secrets_dir]
    assert mount["readOnly"] is True
    assert volumes[mount["name"]]["secret"]["secretName"] == secret["metadata"]["name"]
    # Where a variable feeds a secret param (a DSN, a password), it comes from the Secret.
    secret_params = re.findall(r'"(?:mysql_dsn|password)": "\$\{(\w+)', production)
    assert set(secret_params) == {"FEED_MYSQL_DSN", "REDIS_PASSWORD"}
    for name in [*secret_params, "PINEAPPLE_ADMIN_TOKEN"]:
        assert name not in env and name in keys, name
        assert secret["stringData"][name] == "", f"{name}: no value is committed"


def test_the_network_policy_admits_the_http_port_and_only_the_egress_needed(
    k8s: dict[str, dict[str, Any]],
) -> None:
    policy = k8s["NetworkPolicy"]["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= _template_labels(k8s).items()
    assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
    names = {p["name"] for p in _container(k8s)["ports"]}
    for rule in policy["ingress"]:
        assert {p["port"] for p in rule["ports"]} <= names
    egress = {p["port"] for rule in policy["egress"] for p in rule["ports"]}
    assert egress == {53, 3306, 6379}  # DNS, MySQL, Redis


def test_prometheus_scrapes_the_metrics_route(
    k8s: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    annotations = k8s["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    ports = {p["containerPort"] for p in _container(k8s)["ports"]}
    assert int(annotations["prometheus.io/port"]) in ports
    config = tmp_path / "config.json"
    config.write_text(k8s["ConfigMap"]["data"]["config.json"])
    with TestClient(server.create_app(server.Config(config_path=config, watch=False))) as client:
        answer = client.get(annotations["prometheus.io/path"])
    assert answer.status_code == 200 and "pineapple_" in answer.text


@pytest.fixture(scope="module")
def serve_help() -> str:
    """``pineapple serve --help`` as the real command prints it."""
    code = "import sys; from pineapple.cli import main; sys.exit(main())"
    done = subprocess.run(
        [sys.executable, "-c", code, "serve", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _flags(argv: list[str]) -> set[str]:
    return {arg.split("=", 1)[0] for arg in argv if arg.startswith("--")}


def _docker_examples() -> list[list[str]]:
    """The commented command lines of the Dockerfile (continuations joined), split
    (``CMD`` as the exec form's JSON array, the rest as a shell splits them)."""
    commands, current = [], ""
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        text = line.removeprefix("#").strip()
        if not line.startswith("#") or not (current or text.startswith(("docker ", "CMD "))):
            continue
        current += " " + text.removesuffix("\\")
        if not text.endswith("\\"):
            commands.append(current.strip())
            current = ""
    return [
        ["CMD", *json.loads(cmd[4:])] if cmd.startswith("CMD ") else shlex.split(cmd)
        for cmd in commands
    ]


def test_every_flag_the_deploy_files_name_is_in_serve_help(
    k8s: dict[str, dict[str, Any]], serve_help: str
) -> None:
    c = _container(k8s)
    named = _flags(c["args"]) | _flags(_dockerfile_cmd())
    examples = _docker_examples()
    assert len(examples) == 3  # docker build, docker run, the plugin layer's CMD
    for argv in examples:
        if "serve" in argv:
            named |= _flags(argv[argv.index("serve") :])
    assert {"--addr", "--workers", "--shared-dir", "--log-format", "--plugin"} <= named
    for flag in sorted(named):
        assert re.search(rf"(^|[\s\[,]){re.escape(flag)}\b", serve_help), f"{flag}: not in --help"


def test_the_docker_run_example_mounts_the_config_folder(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (run,) = [argv for argv in _docker_examples() if argv[:2] == ["docker", "run"]]
    volume = run[run.index("-v") + 1]
    source, target, *_mode = volume.replace("$PWD", str(ROOT)).split(":")
    assert Path(source).is_dir(), f"-v {volume}: mount a folder"
    serve = run[run.index("pineapple") :]
    args = _serve_args(serve)
    config = Path(source) / Path(args.config).relative_to(target)
    assert config.is_file()
    # What the demo reads beside its config (data/*.json) is in the mounted folder.
    for path in re.findall(r'"path": "([^"]+)"', config.read_text()):
        assert (config.parent / path).is_file(), path
    assert main(["check", str(config), "--fetch"]) == 0, capsys.readouterr()


def test_the_plugin_layer_example_runs_the_same_server_with_a_plugin() -> None:
    (cmd,) = [argv for argv in _docker_examples() if argv[0] == "CMD"]
    args = _serve_args(cmd[1:])
    assert args.plugin == ["my_types"]
    assert args.config == _serve_args(_dockerfile_cmd()).config


# -- monitoring: the Prometheus Operator's ServiceMonitor and PrometheusRule ---------------

MONITORING = DEPLOY / "kubernetes" / "monitoring"
_METRIC = re.compile(r"\b(pineapple_[a-z_]+|pine_[a-z_]+)\b")
_MATCHERS = re.compile(r"\b([a-z_]+)\{([^}]*)\}")
_LABEL = re.compile(r"([a-z_]+)\s*(?:=~|!=|!~|=)")
_DURATION = re.compile(r"\d+[smhd]")


def _monitoring() -> dict[str, dict[str, Any]]:
    """The objects of deploy/kubernetes/monitoring (CRDs: not in the Kubernetes schema, so
    checked here field by field), by kind, as its kustomization lists them."""
    from ._kustomize import render

    found: dict[str, dict[str, Any]] = {}
    for doc in render(MONITORING):
        assert doc["apiVersion"] == "monitoring.coreos.com/v1", doc["kind"]
        assert doc["kind"] not in found, doc["kind"]
        found[doc["kind"]] = doc
    assert set(found) == {"ServiceMonitor", "PrometheusRule"}
    return found


def test_the_servicemonitor_scrapes_the_services_http_port(
    k8s: dict[str, dict[str, Any]],
) -> None:
    monitor = _monitoring()["ServiceMonitor"]
    service = k8s["Service"]
    assert monitor["metadata"]["namespace"] == service["metadata"]["namespace"]
    selected = monitor["spec"]["selector"]["matchLabels"]
    assert selected.items() <= service["metadata"]["labels"].items()
    ports = {p["name"] for p in service["spec"]["ports"]}
    for endpoint in monitor["spec"]["endpoints"]:
        assert endpoint["port"] in ports
        assert endpoint["path"] == "/metrics"
        assert _DURATION.fullmatch(endpoint["interval"]), endpoint
        assert _DURATION.fullmatch(endpoint["scrapeTimeout"]), endpoint


@pytest.fixture(scope="module")
def exposition(k8s: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> str:
    """``GET /metrics`` of the example config, served by the real app."""
    config = tmp_path_factory.mktemp("metrics") / "config.json"
    config.write_text(k8s["ConfigMap"]["data"]["config.json"])
    with TestClient(server.create_app(server.Config(config_path=config, watch=False))) as client:
        client.post("/execute", content=b'{"common": {}, "items": []}')  # a status label
        answer = client.get("/metrics")
    assert answer.status_code == 200
    return answer.text


def _families(text: str) -> dict[str, set[str]]:
    """``metric name -> label names`` of an exposition (samples' names: ``_total`` kept)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, set()).update(sample.labels)
    return out


def test_every_alert_names_metrics_and_labels_the_server_exposes(exposition: str) -> None:
    from server.metrics._pod_metrics import GAUGE_MODES

    exposed = _families(exposition)
    pod_only = {"pineapple_workers", "pineapple_workers_serving"}  # the supervisor's
    assert pod_only <= set(GAUGE_MODES)
    rules = [
        rule
        for group in _monitoring()["PrometheusRule"]["spec"]["groups"]
        for rule in group["rules"]
    ]
    assert len({rule["alert"] for rule in rules}) == len(rules)
    for rule in rules:
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule
        assert "for" not in rule or _DURATION.fullmatch(rule["for"]), rule
        expr = rule["expr"]
        assert expr.count("(") == expr.count(")"), rule["alert"]
        for name in _METRIC.findall(expr):
            assert name in exposed or name in pod_only, f"{rule['alert']}: no metric {name}"
        for name, matchers in _MATCHERS.findall(expr):
            if name in exposed:
                labels = set(_LABEL.findall(matchers))
                assert labels <= exposed[name], f"{rule['alert']}: {name} has no {labels}"


def test_the_alerts_cover_the_pods_state() -> None:
    exprs = " ".join(
        rule["expr"]
        for group in _monitoring()["PrometheusRule"]["spec"]["groups"]
        for rule in group["rules"]
    )
    for what in (
        'condition="Valid",status="False"',  # a refusal
        'condition="Fresh",status="False"',  # a value its source does not confirm
        "pineapple_resource_ready",
        "pineapple_config_last_reload_success",
        "pineapple_config_generation",
        "pineapple_worker_restarts_total",
        "pineapple_build_info",
    ):
        assert what in exprs, what
