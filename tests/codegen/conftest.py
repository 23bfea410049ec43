from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

import codegen
from tests.dsl._schemas import OPERATOR_SCHEMAS, RESOURCE_SCHEMAS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def rendered() -> dict[str, str]:
    """The generated files for the test schemas."""
    return codegen.render_all(RESOURCE_SCHEMAS, OPERATOR_SCHEMAS)


def load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def generated(
    tmp_path_factory: pytest.TempPathFactory, rendered: dict[str, str]
) -> dict[str, ModuleType]:
    """The generated files for the test schemas, written to a temp dir and imported."""
    folder = tmp_path_factory.mktemp("generated")
    codegen.write_files(folder, rendered)
    return {
        "resources": load_module("_gen_test_resources", folder / "resources.py"),
        "operators": load_module("_gen_test_operators", folder / "operators.py"),
    }


def ruff() -> list[str]:
    exe = shutil.which("ruff", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("ruff is not installed beside this interpreter")
    return [exe]
