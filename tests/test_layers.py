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

_HEAVY = ("pineapple.engine", "pineapple.operators", "resources", "pymysql", "pyarrow", "server")


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


def test_a_bare_engine_finds_the_built_in_operators() -> None:
    # The default registry imports its entry-point group on the first unknown name:
    # our built-ins are named there like any plugin.
    code = (
        "from pineapple.engine import Engine\n"
        f"assert Engine({SIZE_CONFIG!r}).execute(None, {{'common': {{}}, 'items': [{{}}]}})"
        " == {'common': {'n': 1}, 'items': [{}]}\n"
        "from pineapple import resource\n"
        "m = resource.Manager()\n"
        "m.load_from_root_config({'resource_config': {'s': {'type': 'static', "
        "'params': {'value': 1}}}})\n"
        "m.start()\n"
        "with m.get('s') as v: assert v == 1\n"
        "m.stop()\n"
    )
    loaded = _loaded_after(code)
    assert loaded["pineapple.operators"] and loaded["resources"], loaded
    assert not loaded["server"], loaded


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


def test_our_built_ins_and_commands_are_named_in_our_entry_point_groups() -> None:
    def values(group: str) -> set[str]:
        return {ep.value for ep in importlib.metadata.entry_points(group=group)}

    assert {"pineapple.operators", "resources"} <= values("pineapple.operators")
    assert "resources" in values("pineapple.resources")
    assert {
        "server.cli._commands:add_commands",
        "dsl._cli:add_compile_command",
        "codegen._main:add_codegen_command",
    } <= values("pineapple.commands")


def test_importing_the_resource_runtime_loads_no_engine_and_no_types() -> None:
    loaded = _loaded_after("import pineapple.resource")
    assert not any(loaded.values()), loaded


def test_importing_pineapple_loads_no_engine() -> None:
    loaded = _loaded_after("import pineapple")
    assert not any(loaded.values()), loaded


def test_importing_the_server_loads_no_pyarrow_and_no_resource_types() -> None:
    """Only a codec touches Arrow (its ``release_memory`` hook): the server names none."""
    loaded = _loaded_after("import server")
    assert loaded["server"] and not loaded["pyarrow"] and not loaded["resources"], loaded
