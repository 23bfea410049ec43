"""``pineapple compile FLOW.py -o CONFIG.json`` and ``dsl.load_flow``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsl import Flow, FlowLoadError, load_flow
from pineapple.cli import main

GOOD = """
from dsl import Flow
from dsl.generated.resources import StaticResource

flow = Flow("cli", item_output=["id"])
flow.resource("hot", StaticResource(value=[{"id": 1}]))
"""


def write(tmp_path: Path, body: str, name: str = "flow.py") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


def test_load_flow_takes_a_flow_or_a_function_returning_one(tmp_path: Path) -> None:
    assert isinstance(load_flow(write(tmp_path, GOOD)), Flow)
    make = write(tmp_path, "from dsl import Flow\n\ndef flow():\n    return Flow('x')\n", "f2.py")
    assert load_flow(make).name == "x"


def test_load_flow_may_import_modules_beside_it(tmp_path: Path) -> None:
    write(tmp_path, "NAME = 'sibling'\n", "helper_for_flow.py")
    path = write(
        tmp_path,
        "from dsl import Flow\nimport helper_for_flow\nflow = Flow(helper_for_flow.NAME)\n",
    )
    assert load_flow(path).name == "sibling"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("x = 1\n", "defines no 'flow'"),
        ("flow = 42\n", "'flow' is an int, not a dsl.Flow"),
        ("def flow():\n    return None\n", "'flow' is a NoneType"),
        ("import nonexistent_module_xyz\n", "ModuleNotFoundError"),
        ("flow = (\n", "SyntaxError"),
    ],
)
def test_load_flow_errors_name_the_file(tmp_path: Path, body: str, message: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(FlowLoadError, match=message) as info:
        load_flow(path)
    assert str(path) in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FlowLoadError, match="no such file"):
        load_flow(tmp_path / "absent.py")


def test_compile_writes_the_config(tmp_path: Path) -> None:
    body = (
        GOOD
        + "flow.add_operator('recall_resource', {'resource_name': 'hot'}, item_output=['id'])\n"
    )
    out = tmp_path / "out" / "config.json"
    assert main(["compile", str(write(tmp_path, body)), "-o", str(out)]) == 0
    config = json.loads(out.read_text())
    assert config["resource_config"] == {
        "hot": {"type": "static", "interval": -1, "params": {"value": [{"id": 1}]}}
    }
    assert [p.name for p in out.parent.iterdir()] == ["config.json"]  # no temp file left


def test_compile_reports_a_missing_declaration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    body = GOOD + "flow.add_operator('recall_resource', {'resource_name': 'cold'}, name='r')\n"
    out = tmp_path / "config.json"
    assert main(["compile", str(write(tmp_path, body)), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "pineapple compile: error:" in err and "'r' needs resource 'cold'" in err
    assert not out.exists()


def test_compile_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = GOOD + "flow.add_operator('filter_truncate', {'top_n': 1}, name='cut')\n"
    assert main(["compile", str(write(tmp_path, body))]) == 0
    assert "cut" in json.loads(capsys.readouterr().out)["pipeline_config"]["operators"]


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in ([], ["compile"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    assert "FLOW.py" in capsys.readouterr().err


def test_compile_output_is_byte_stable_across_processes(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    body = (
        GOOD
        + "from tests.dsl._schemas import operator_registry\n"
        + "import dsl._compile\n"
        + "dsl._compile.default_operator_registry = operator_registry\n"
        + "flow.add_operator('recall_resource', {'resource_name': 'hot'}, item_output=['id'])\n"
        + "flow.add_operator('filter_truncate', {'top_n': 3}, sources=[])\n"
    )
    path = write(tmp_path, body)
    repo = Path(__file__).resolve().parents[2]
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}.json"
        subprocess.run(
            [str(Path(sys.executable).parent / "pineapple"), "compile", str(path), "-o", str(out)],
            check=True,
            cwd=repo,
            capture_output=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(repo)},
        )
        lines = out.read_text().splitlines()
        outputs.append([line for line in lines if "_PINEAPPLE_CREATE_TIME" not in line])
    assert outputs[0] == outputs[1]
    assert len(outputs[0]) > 20
