"""mkdocs hooks (``mkdocs.yml``): pages made from the code at build time.

- ``reference/operators.md`` and ``reference/resource-types.md``: every
  registered type and param (:mod:`codegen._reference`), from the registries
  of :mod:`pineapple.builtins`; ``reference/benchmark-operators.md``: the
  operators only benchmarks use (the stubs of ``pineapple.operators.bench``
  and the default registry's ``transform_bench_*``), on no other page.
- ``img/demo-dag.svg``: the demo flow's operator graph, drawn by ``pineapple
  dag --format svg`` (Graphviz's ``dot``); without ``dot`` the page shows the
  DOT text instead, and the build says so at INFO.
- The API page's docstrings are written for ``help()`` and Sphinx
  (``:class:`Manager```); :func:`on_page_content` shows each role as the code
  it names (``~a.b.C``: ``C``), never the raw marker.
"""

from __future__ import annotations

import logging
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

from codegen._reference import (
    render_benchmark_reference,
    render_operator_reference,
    render_resource_reference,
)
from pineapple import builtins
from pineapple.engine import OperatorSchema

__all__ = ["on_files", "on_page_content", "on_page_markdown", "sphinx_roles_as_code"]

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "configs" / "demo.json"
DAG_TIMEOUT = 60.0
"""Seconds ``pineapple dag`` may take (it renders a handful of operators)."""

_CLI = "import sys; from pineapple.cli import main; sys.exit(main(sys.argv[1:]))"
_log = logging.getLogger("mkdocs.hooks.pineapple")
_DAG_MARKER = "<!-- demo-dag -->"


def _dag(fmt: str) -> bytes | None:
    done = subprocess.run(
        [sys.executable, "-c", _CLI, "dag", str(DEMO), "--format", fmt],
        capture_output=True,
        timeout=DAG_TIMEOUT,
        cwd=ROOT,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


def on_files(files: Files, config: Any) -> Files:
    """Add the generated reference pages and the demo DAG."""
    operators = render_operator_reference(builtins.operator_registry().all())
    resources = render_resource_reference(builtins.resource_registry().all())
    bench = render_benchmark_reference(_stubs(), builtins.operator_registry().all())
    files.append(File.generated(config, "reference/operators.md", content=operators))
    files.append(File.generated(config, "reference/benchmark-operators.md", content=bench))
    files.append(File.generated(config, "reference/resource-types.md", content=resources))
    svg = _dag("svg") if shutil.which("dot") else None
    if svg is not None:
        files.append(File.generated(config, "img/demo-dag.svg", content=svg))
    return files


def _stubs() -> list[OperatorSchema]:
    """The schemas of ``pineapple.operators.bench``'s stubs."""
    from pineapple.operators.bench import STUB_NAMES, bench_operator_registry

    return [s for s in bench_operator_registry().all() if s.name in STUB_NAMES]


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Put the demo DAG where a page has the ``<!-- demo-dag -->`` marker."""
    if _DAG_MARKER not in markdown:
        return markdown
    if files.get_file_from_path("img/demo-dag.svg") is not None:
        depth = page.file.src_uri.count("/")
        image = f"![The demo flow's operator graph]({'../' * depth}img/demo-dag.svg)"
        return markdown.replace(_DAG_MARKER, image)
    _log.info("Graphviz's dot is not installed: the demo DAG is shown as DOT text")
    dot = (_dag("dot") or b"").decode()
    return markdown.replace(_DAG_MARKER, f"```dot\n{dot}```")


_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|mod|data|exc|obj|const):<code>([^<]*)</code>")
"""A Sphinx role as Markdown renders it: ``:class:<code>~x.Manager</code>`` (linear: no
nested quantifiers; ``[^<]*`` stops at the code's end)."""


def sphinx_roles_as_code(html: str) -> str:
    """``:class:<code>~pineapple.Manager</code>`` -> ``<code>Manager</code>`` (Sphinx's
    ``~``: the last name only); a role without the tilde keeps its whole path."""

    def code(match: re.Match[str]) -> str:
        target = match.group(1)
        if target.startswith("~"):
            target = target[1:].rsplit(".", 1)[-1]
        return f"<code>{target}</code>"

    return _ROLE.sub(code, html)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """Docstrings' Sphinx roles shown as plain code (see :func:`sphinx_roles_as_code`)."""
    return sphinx_roles_as_code(html)
