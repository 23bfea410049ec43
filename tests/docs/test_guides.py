"""The guides in ``docs/`` cannot rot: their code is the example file, and it runs.

Every code block marked ``<!-- from examples/wordlist_plugin.py -->`` must be a
verbatim part of that file; the file itself is then run as a user would run
it: loaded as a plugin into a fresh interpreter (so its registrations do not
leak into this test process's registries), driven through a real Manager and
a real Engine.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLE = DOCS / "examples" / "wordlist_plugin.py"
MARKED = re.compile(r"<!-- from examples/wordlist_plugin\.py -->\n```python\n(.*?)\n```", re.S)

GUIDES = ["writing-a-resource-type.md", "writing-an-operator.md"]

DRIVE = r"""
import sys, time
from pineapple import plugins, resource
from pineapple.engine import Engine

words = sys.argv[1]
plugins.import_plugin(sys.argv[2])
import resources  # noqa: F401  (built-in types, for recall_static)
import pineapple.operators  # noqa: F401

config = {
    "pipeline_config": {"operators": {
        "recall": {"type_name": "recall_static", "items": [{"w": "spam"}, {"w": "egg"}],
                   "$metadata": {"item_output": ["w"]}},
        "drop": {"type_name": "filter_word_list", "resource_name": "words",
                 "$metadata": {"item_input": ["w"]}}},
        "pipeline_map": {}},
    "pipeline_group": {"main": {"pipeline": ["recall", "drop"]}},
    "flow_contract": {"item_output": ["w"]},
    "resource_config": {"words": {"type": "word_list", "params": {"path": words}}},
}
rm = resource.Manager()
rm.load_from_root_config(config)
rm.start()
engine = Engine(config)
ctx = resource.with_resources(None, rm)
assert engine.execute(ctx, {"common": {}, "items": []})["items"] == [{"w": "egg"}]

# Unchanged file: NOT_MODIFIED, no swap.
assert rm.refresh("words") == "not_modified", rm.refresh("words")
held = rm.get("words")
first = held.value
assert "spam" in first and not first.closed

# A changed file: a new value; the old one stays open while borrowed ...
with open(words, "w") as fh:
    fh.write("egg\n")
assert rm.refresh("words") == "swapped"
assert engine.execute(ctx, {"common": {}, "items": []})["items"] == [{"w": "spam"}]
assert not first.closed
held.release()
# ... and is closed exactly once after its last release.
resource.lowlevel.flush_closes(5.0)
assert first.closed

# A config reload that keeps the entry carries the value over, and the new
# fetcher (told by carry_over) still answers NOT_MODIFIED.
rm2 = resource.Manager()
rm2.load_from_root_config(config, carry_over=rm)
rm2.start()
assert rm2.refresh("words") == "not_modified"
status = {s.name: s for s in rm2.status()}["words"]
assert "word_list: 1 words" in status.summary, status.summary
rm.stop()
rm2.stop()
print("ok")
"""


@pytest.mark.parametrize("guide", GUIDES)
def test_every_marked_block_is_part_of_the_example(guide: str) -> None:
    text = (DOCS / guide).read_text()
    blocks = MARKED.findall(text)
    assert blocks, f"{guide} quotes no block of the example"
    source = EXAMPLE.read_text()
    for block in blocks:
        assert block in source, f"{guide}: a block is not in {EXAMPLE.name}:\n{block}"


def test_guides_are_linked_from_the_docs_site() -> None:
    extending = (DOCS / "extending.md").read_text()
    nav = (ROOT / "mkdocs.yml").read_text()
    for guide in GUIDES:
        assert f"({guide})" in extending and guide in nav
    assert "docs/extending.md" in (ROOT / "README.md").read_text()


def test_the_example_runs(tmp_path: Path) -> None:
    words = tmp_path / "words.txt"
    words.write_text("spam\n# a comment\nham\n")
    result = subprocess.run(
        [sys.executable, "-c", DRIVE, str(words), str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
