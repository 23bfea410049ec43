"""Layering: what importing a package, or building a bare Engine, pulls into the process.

Each check runs in a fresh interpreter (a subprocess with a timeout), since
this test process has long since imported everything.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

from pineapple import builtins

ROOT = Path(__file__).resolve().parents[1]

_HEAVY = ("pineapple.engine", "pineapple.operators", "resources", "pymysql", "server")


def _loaded_after(code: str) -> dict[str, bool]:
    """Run ``code`` in a fresh interpreter; which of ``_HEAVY`` it imported."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps({{m: m in sys.modules for m in {list(_HEAVY)!r}}}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, bool] = json.loads(done.stdout.splitlines()[-1])
    return loaded


SIZE_CONFIG = {
    "pipeline_config": {
        "operators": {
            "size": {"type_name": "transform_size", "$metadata": {"common_output": ["n"]}}
        }
    },
    "pipeline_group": {"main": {"pipeline": ["size"]}},
    "flow_contract": {"common_output": ["n"]},
}


def test_a_bare_engine_imports_neither_operators_nor_resources() -> None:
    code = (
        "from pineapple import RegistryError\n"
        "from pineapple.engine import Engine\n"
        "try:\n"
        f"    Engine({SIZE_CONFIG!r})\n"
        "except RegistryError as exc:\n"
        "    assert 'transform_size' in str(exc), exc\n"
        "else:\n"
        "    raise AssertionError('a bare Engine found an operator nobody imported')\n"
    )
    loaded = _loaded_after(code)
    assert loaded["pineapple.engine"]
    assert not (loaded["pineapple.operators"] or loaded["resources"] or loaded["pymysql"]), loaded


def test_the_built_in_operators_need_no_resource_types() -> None:
    code = (
        "import pineapple.operators\n"
        "from pineapple.engine import Engine\n"
        f"assert Engine({SIZE_CONFIG!r}).execute(None, {{'common': {{}}, 'items': [{{}}]}})"
        " == {'common': {'n': 1}, 'items': [{}]}\n"
    )
    loaded = _loaded_after(code)
    assert not (loaded["resources"] or loaded["pymysql"] or loaded["server"]), loaded


def test_builtins_hand_out_filled_registries() -> None:
    operators = {s.name for s in builtins.operator_registry().all()}
    assert {"transform_size", "transform_by_lua", "recall_feed_data"} <= operators
    types = {s.name for s in builtins.resource_registry().all()}
    assert {"static", "redis_connection", "feed_data", "json_file", "csv_file"} <= types


def test_entry_points_are_left_to_third_party_plugins() -> None:
    for group in ("pineapple.operators", "pineapple.resources"):
        ours = [
            ep.value
            for ep in importlib.metadata.entry_points(group=group)
            if ep.value.split(".")[0] in {"pineapple", "resources"}
        ]
        assert ours == [], f"{group} names our own packages: {ours}"


def test_importing_the_resource_runtime_loads_no_engine_and_no_types() -> None:
    loaded = _loaded_after("import pineapple.resource")
    assert not any(loaded.values()), loaded


def test_importing_pineapple_loads_no_engine() -> None:
    loaded = _loaded_after("import pineapple")
    assert not any(loaded.values()), loaded
