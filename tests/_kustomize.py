"""deploy/kubernetes rendered as ``kubectl kustomize`` renders it, for the deploy tests.

What our kustomizations use, and nothing else (anything more fails loudly):
``resources`` (files and folders, recursively), ``namespace`` (every object's,
and the name of a ``Namespace`` object), ``images`` (``newName``, ``newTag``,
``digest``) and ``patches`` of JSON 6902 ``add``/``remove``/``replace`` ops
on one target each (``~1`` and ``~0`` escapes in paths).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

__all__ = ["kustomization", "render"]

_KNOWN = {"apiVersion", "kind", "resources", "namespace", "images", "patches"}


def kustomization(folder: Path) -> dict[str, Any]:
    """``folder/kustomization.yaml``, checked to use only what :func:`render` knows."""
    doc: dict[str, Any] = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert doc["kind"] == "Kustomization"
    assert set(doc) <= _KNOWN, f"{folder}: unknown fields {sorted(set(doc) - _KNOWN)}"
    return doc


def render(folder: Path) -> list[dict[str, Any]]:
    """The objects ``folder``'s kustomization makes."""
    spec = kustomization(folder)
    objects: list[dict[str, Any]] = []
    for entry in spec["resources"]:
        path = (folder / entry).resolve()
        if path.is_dir():
            objects += render(path)
        else:
            objects += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    for patch in spec.get("patches", []):
        target = patch["target"]
        matches = [
            o
            for o in objects
            if o["kind"] == target["kind"] and o["metadata"]["name"] == target["name"]
        ]
        assert len(matches) == 1, f"patch target {target} matches {len(matches)} objects"
        for op in yaml.safe_load(patch["patch"]):
            _apply(matches[0], op)
    if "namespace" in spec:
        for o in objects:
            if o["kind"] == "Namespace":
                o["metadata"]["name"] = spec["namespace"]
            else:
                o["metadata"]["namespace"] = spec["namespace"]
    for image in spec.get("images", []):
        for o in objects:
            for container in _containers(o):
                _set_image(container, image)
    return objects


def _containers(o: dict[str, Any]) -> list[dict[str, Any]]:
    if o["kind"] not in ("Deployment", "StatefulSet", "DaemonSet", "Job"):
        return []
    pod = o["spec"]["template"]["spec"]
    return [*pod.get("initContainers", []), *pod["containers"]]


def _set_image(container: dict[str, Any], image: dict[str, Any]) -> None:
    name = container["image"].split("@")[0].rsplit(":", 1)[0]
    if name != image["name"]:
        return
    tag = container["image"].split("@")[0].rsplit(":", 1)[1]
    base = image.get("newName", name)
    if "digest" in image:
        container["image"] = f"{base}@{image['digest']}"
    else:
        container["image"] = f"{base}:{image.get('newTag', tag)}"


def _apply(doc: dict[str, Any], op: dict[str, Any]) -> None:
    """One JSON 6902 op on ``doc``."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].strip("/").split("/")]
    *parents, last = parts
    node: Any = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    kind = op["op"]
    if kind == "add":
        if last == "-":
            node.append(op["value"])
        elif isinstance(node, list):
            node.insert(int(last), op["value"])
        else:
            node[last] = op["value"]
    elif kind == "remove":
        key: Any = int(last) if isinstance(node, list) else last
        del node[key]  # a missing key raises, as kustomize refuses it
    elif kind == "replace":
        key = int(last) if isinstance(node, list) else last
        node[key]
        node[key] = op["value"]
    else:
        raise AssertionError(f"unknown op {op}")
