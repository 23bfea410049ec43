"""The server's compiled group: its own list, its own decision, and both passes of CI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from pineapple import _native as core
from server import _native

PURE_ENV = os.environ.get("PINEAPPLE_PURE_PYTHON") == "1"
REPO = Path(__file__).resolve().parents[2]


def test_the_server_runs_its_group_compiled_unless_told_not_to() -> None:
    # A failure here, never a skip: CI builds both groups (make install); only the pure
    # pass of make test (PINEAPPLE_PURE_PYTHON=1) runs without them.
    from server.http import _answer_batch
    from server.metrics import _gometrics, _request_metrics

    files = [m.__file__ or "" for m in (_answer_batch, _gometrics, _request_metrics)]
    if PURE_ENV:
        assert not _native.compiled() and _native.pure_reason() == "PINEAPPLE_PURE_PYTHON=1"
        assert all(f.endswith(".py") for f in files), files
    else:
        assert _native.compiled(), _native.pure_reason()
        assert not any(f.endswith(".py") for f in files), files


def test_the_server_lists_its_own_group_and_the_core_none_of_it() -> None:
    assert _native.SERVER.modules == (
        "server.http._answer_batch",
        "server.metrics._gometrics",
        "server.metrics._request_metrics",
    )
    assert not set(_native.SERVER.modules) & set(core.COMPILED)
    assert all(
        (REPO / Path(*m.split("."))).with_suffix(".py").is_file() for m in _native.SERVER.modules
    )


def test_the_build_and_the_makefile_read_the_lists_one_way() -> None:
    listed = subprocess.run(
        [sys.executable, "setup.py", "--native-sources"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    expected = [
        str(Path(*m.split(".")).with_suffix(".py"))
        for m in (*core.COMPILED, *_native.SERVER.modules)
    ]
    assert listed == expected
    makefile = (REPO / "Makefile").read_text()
    assert "NATIVE_SRC := $(shell $(PY) setup.py --native-sources)" in makefile


def test_the_pure_pass_of_ci_runs_the_tests_of_each_compiled_server_module() -> None:
    """Each compiled server module's wing (``server.http._answer_batch``: ``http``) has
    its tests in the pure-Python pass, where the module runs as Python."""
    makefile = (REPO / "Makefile").read_text()
    pure = re.search(r"^PURE_TESTS := ((?:.*\\\n)*.*)$", makefile, re.M)
    assert pure is not None
    listed = pure.group(1).replace("\\\n", " ").split()
    wings = {"tests/server/" + name.split(".")[1] for name in _native.SERVER.modules}
    assert wings == {"tests/server/http", "tests/server/metrics"}
    assert wings <= set(listed), listed
