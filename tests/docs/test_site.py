"""The docs site: a strict build, references that cover the registries, a working browser view.

One ``mkdocs build --strict`` (what ``make docs`` runs) into a temp folder is
shared by the tests here. The reference pages are generated from the
registries at build time (``codegen/_mkdocs_hooks.py``); the test reads the
built HTML, so a type or param missing from the generated pages fails it.
The browser test serves the built site on loopback and drives the system's
headless Chromium (Debian's ``chromium``, which ``.ci/run`` installs) with
Playwright; without that browser it skips with the reason.
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codegen._reference import is_benchmark_only

ROOT = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 240.0
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built as ``make docs`` builds it (strict: a warning fails the build)."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    return out


_REGISTERED = """
import json
from pineapple import builtins
print(json.dumps({
    "operators": {s.name: sorted(s.params) for s in builtins.operator_registry().all()},
    "resources": {s.name: sorted(s.params) for s in builtins.resource_registry().all()},
}))
"""


@pytest.fixture(scope="module")
def registered() -> dict[str, dict[str, list[str]]]:
    """The types and params a fresh process registers (what the docs build sees; this test
    process's default registries also hold what other tests registered)."""
    done = subprocess.run(
        [sys.executable, "-c", _REGISTERED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    found: dict[str, dict[str, list[str]]] = json.loads(done.stdout)
    return found


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text()))


@pytest.mark.timeout(300)
def test_the_operator_reference_lists_every_registered_operator_and_param(
    site: Path, registered: dict[str, dict[str, list[str]]]
) -> None:
    users = _text(site / "reference" / "operators" / "index.html")
    bench = _text(site / "reference" / "benchmark-operators" / "index.html")
    assert {"filter_truncate", "recall_feed_data", "transform_bench_cpu"} <= set(
        registered["operators"]
    )
    for name, params in registered["operators"].items():
        # a benchmark-only operator is on the benchmark page, and on no user page
        text, other = (bench, users) if is_benchmark_only(name) else (users, bench)
        section = text.split(name, 1)
        assert len(section) == 2, f"operator {name} missing from its reference page"
        for param in params:
            assert param in section[1], f"param {name}.{param} missing"
        if is_benchmark_only(name):
            assert name not in other and name not in _text(site / "operators" / "index.html")


@pytest.mark.timeout(300)
def test_the_benchmark_page_lists_every_stub(site: Path) -> None:
    text = _text(site / "reference" / "benchmark-operators" / "index.html")
    done = subprocess.run(
        [sys.executable, "-c", _STUBS], cwd=ROOT, capture_output=True, text=True, check=True
    )
    stubs = json.loads(done.stdout)
    assert len(stubs) >= 9
    for name in stubs:
        assert f"{name} " in text, f"stub {name} missing from the benchmark page"


_STUBS = (
    "import json; from pineapple.operators.bench import STUB_NAMES; print(json.dumps(STUB_NAMES))"
)


@pytest.mark.timeout(300)
def test_the_api_page_shows_the_users_api_only(site: Path) -> None:
    page = (site / "api" / "index.html").read_text()
    text = _text(site / "api" / "index.html")
    for name in ("Manager", "load_from_root_config", "Engine", "execute", "Config", "Flow"):
        assert name in text, name
    # neither compiled modules' runtime attributes nor private members
    for internal in ("__mypyc_attrs__", "__new__", "__weakref__", "__module__", "__dict__"):
        assert internal not in text, internal
    # docstrings' Sphinx roles show as the code they name, never as raw markers
    assert not re.search(r":(class|meth|func|attr|mod|data|exc|obj):", text)
    assert "<code>ManagerStateError</code>" in page


@pytest.mark.timeout(300)
def test_the_resource_reference_lists_every_registered_type_and_param(
    site: Path, registered: dict[str, dict[str, list[str]]]
) -> None:
    text = _text(site / "reference" / "resource-types" / "index.html")
    assert {"feed_data", "json_file"} <= set(registered["resources"])
    for name, params in registered["resources"].items():
        section = text.split(name, 1)
        assert len(section) == 2, f"resource type {name} missing from the reference"
        for param in params:
            assert param in section[1], f"param {name}.{param} missing"


@pytest.mark.timeout(300)
def test_the_home_page_shows_the_demo_flow_graph(site: Path) -> None:
    home = (site / "index.html").read_text()
    if shutil.which("dot"):
        assert 'src="img/demo-dag.svg"' in home
        assert "recall_candidates" in (site / "img" / "demo-dag.svg").read_text()
    else:  # without Graphviz the build shows the DOT text (and says so at INFO)
        assert "recall_candidates" in home


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site on a loopback port (search loads its index over HTTP)."""
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.mark.timeout(300)
@pytest.mark.skipif(CHROMIUM is None, reason="no system Chromium (Debian: apt install chromium)")
def test_a_browser_finds_the_pages_and_the_search_works(served: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(30_000)
            page.goto(f"{served}/quickstart/")
            assert page.locator("h1").first.inner_text().rstrip("¶") == "Quickstart"
            assert page.locator("h2", has_text="A first request").count() == 1
            page.goto(f"{served}/reference/operators/")
            assert page.locator("h1").first.inner_text().rstrip("¶") == "Operator reference"
            assert page.locator("h2", has_text="filter_truncate").count() == 1
            page.keyboard.press("/")  # Material's shortcut: focus the search box
            page.keyboard.type("top_n", delay=20)
            results = page.locator(".md-search-result__item")
            results.first.wait_for()
            assert results.count() > 0
            assert "filter_truncate" in page.locator(".md-search-result").inner_text()
        finally:
            browser.close()
