"""Issue 33, item 13: the HTTP edge runs only on the uvicorn releases it was written for.

The pin in ``pyproject.toml`` and :data:`UVICORN_RANGE` agree; the installed uvicorn
passes the check; another version makes ``pineapple serve`` exit 1 at start, naming
the version and the range, in one process and with ``--workers 2``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import orjson
import pytest
import uvicorn

from server.http._uvicorn_range import UVICORN_RANGE, UnsupportedUvicornError, check_uvicorn

from ..._serve import CLI, ROOT, Serve
from ..pod import WAIT
from .test_answer_size import CONFIG

pytestmark = pytest.mark.timeout(120)

RANGE = ">=0.55,<0.56"


def test_the_pin_in_pyproject_is_the_range_checked() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (pin,) = [d for d in project["dependencies"] if d.startswith("uvicorn")]
    assert pin == f"uvicorn[standard]{RANGE}"
    assert UVICORN_RANGE == ((0, 55), (0, 56))


def test_the_installed_uvicorn_passes() -> None:
    check_uvicorn()
    check_uvicorn(uvicorn.__version__)


@pytest.mark.parametrize("version", ["0.54.9", "0.56.0", "1.0.0", "0.30", "dev"])
def test_another_version_is_refused_naming_it_and_the_range(version: str) -> None:
    with pytest.raises(UnsupportedUvicornError) as refused:
        check_uvicorn(version)
    assert str(refused.value).startswith(f"uvicorn {version} is installed, but ")
    assert f"uvicorn {RANGE}" in str(refused.value)


@pytest.mark.parametrize("version", ["0.55.0", "0.55.3", "0.55.1.post1"])
def test_releases_in_the_range_pass(version: str) -> None:
    check_uvicorn(version)


@pytest.mark.e2e
@pytest.mark.parametrize("workers", [(), ("--workers", "2")], ids=["one process", "workers 2"])
def test_serve_refuses_to_start_on_another_uvicorn(
    workers: tuple[str, ...], tmp_path: Path
) -> None:
    config = tmp_path / "pineapple.json"
    config.write_bytes(orjson.dumps(CONFIG))
    shared = ("--shared-dir", str(tmp_path)) if workers else ()
    main = "import uvicorn; uvicorn.__version__ = '0.99.1'; " + CLI
    server = Serve(config, *workers, *shared, main=main, wait=False)
    try:
        assert server.wait_exit(WAIT) == 1
        log = server.text()
        assert "uvicorn 0.99.1 is installed, but this server's HTTP edge relies on" in log, log
        assert f"uvicorn {RANGE}" in log and "listening on" not in log
        assert "Traceback" not in log
    finally:
        server.close()
