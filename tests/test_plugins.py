"""``--plugin`` as a new user passes it: a module beside them, or a file path.

The plugin is the docs' worked example (``docs/examples/wordlist_plugin.py``)
copied into a temporary folder; every command runs the installed ``pineapple``
console script from that folder (or from elsewhere, with an absolute path),
as a user's shell would: no PYTHONPATH, no ``python -c``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "docs" / "examples" / "wordlist_plugin.py"
PINEAPPLE = Path(sys.executable).with_name("pineapple")

FLOW = """\
from mydsl.operators import Flow
from mydsl.resources import WordListResource

flow = Flow("f", item_output=["w"])
flow.resource("words", WordListResource(path="words.txt"))
flow.recall_static(items=[{"w": "spam"}, {"w": "egg"}], item_output=["w"])
flow.filter_word_list(resource_name="words", item_input=["w"])
"""

HAND_WRITTEN = """\
from dsl import BaseResource, Flow


class WordListResource(BaseResource):
    _name = "word_list"
    _default_interval = 60
    _params_schema = {{"path": {{"type": "string", "required": True}}}}

    def __init__(self, **params):
        super().__init__(**params)


flow = Flow("f", item_output=["w"])
flow.resource("words", WordListResource({params}))
flow.recall_static(items=[{{"w": "spam"}}], item_output=["w"])
"""


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if not PINEAPPLE.exists():
        pytest.fail(f"the console script {PINEAPPLE} is not installed (make install)")
    return subprocess.run(
        [str(PINEAPPLE), *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def config() -> dict[str, object]:
    return {
        "pipeline_config": {
            "operators": {
                "recall": {
                    "type_name": "recall_static",
                    "items": [{"w": "spam"}, {"w": "egg"}],
                    "$metadata": {"item_output": ["w"]},
                },
                "drop": {
                    "type_name": "filter_word_list",
                    "resource_name": "words",
                    "$metadata": {"item_input": ["w"]},
                },
            },
            "pipeline_map": {},
        },
        "pipeline_group": {"main": {"pipeline": ["recall", "drop"]}},
        "flow_contract": {"item_output": ["w"]},
        "resource_config": {"words": {"type": "word_list", "params": {"path": "words.txt"}}},
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(EXAMPLE, tmp_path / "wordlist_plugin.py")
    (tmp_path / "words.txt").write_text("spam\n# a comment\nham\n")
    (tmp_path / "cfg.json").write_bytes(orjson.dumps(config()))
    return tmp_path


@pytest.mark.parametrize("spec", ["wordlist_plugin", "./wordlist_plugin.py"])
def test_check_finds_the_plugin_beside_the_user(project: Path, spec: str) -> None:
    result = run(project, "check", "cfg.json", "--fetch", "--plugin", spec)
    assert result.returncode == 0, result.stderr
    assert "1 resource(s) fetched: words" in result.stdout


def test_check_takes_an_absolute_plugin_path_from_elsewhere(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plugin = str(project / "wordlist_plugin.py")
    result = run(elsewhere, "check", str(project / "cfg.json"), "--plugin", plugin)
    assert result.returncode == 0, result.stderr


def test_a_missing_plugin_is_named(project: Path) -> None:
    result = run(project, "check", "cfg.json", "--plugin", "no_such_plugin")
    assert result.returncode == 1
    assert "[plugins] cannot import plugin 'no_such_plugin'" in result.stderr
    result = run(project, "check", "cfg.json", "--plugin", "./missing.py")
    assert result.returncode == 1
    assert "no such file" in result.stderr


def test_codegen_and_compile_with_a_plugin(project: Path) -> None:
    generated = run(project, "codegen", "--plugin", "wordlist_plugin", "--out", "mydsl")
    assert generated.returncode == 0, generated.stderr
    (project / "mydsl" / "__init__.py").write_text("")
    resources = (project / "mydsl" / "resources.py").read_text()
    operators = (project / "mydsl" / "operators.py").read_text()
    # Only the plugin's own types, not the built-ins.
    assert "class WordListResource(BaseResource)" in resources
    assert "StaticResource" not in resources
    assert "def filter_word_list(" in operators and "def recall_static(" not in operators
    assert "class Flow(OperatorMethods, _Flow)" in operators

    (project / "flow.py").write_text(FLOW)
    compiled = run(project, "compile", "flow.py", "-o", "out.json", "--plugin", "wordlist_plugin")
    assert compiled.returncode == 0, compiled.stderr
    checked = run(project, "check", "out.json", "--fetch", "--plugin", "./wordlist_plugin.py")
    assert checked.returncode == 0, checked.stderr


def test_codegen_plugin_needs_an_out_folder(project: Path) -> None:
    result = run(project, "codegen", "--plugin", "wordlist_plugin")
    assert result.returncode == 2
    assert "--plugin needs --out" in result.stderr


def test_hand_written_resource_class_compiles_without_its_plugin(project: Path) -> None:
    (project / "flow.py").write_text(HAND_WRITTEN.format(params='path="words.txt"'))
    result = run(project, "compile", "flow.py")
    assert result.returncode == 0, result.stderr
    compiled = orjson.loads(result.stdout)
    assert compiled["resource_config"]["words"]["type"] == "word_list"
    # ... and the class's own schema is what checks the params.
    (project / "flow.py").write_text(HAND_WRITTEN.format(params='pth="words.txt"'))
    result = run(project, "compile", "flow.py")
    assert result.returncode == 1
    assert "unknown parameter 'pth'; did you mean 'path'?" in result.stderr
    assert "parameter 'path' is required" in result.stderr
