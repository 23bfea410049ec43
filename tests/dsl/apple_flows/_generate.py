"""Write ``<flow>.expected.json``: what the Apple DSL itself compiles each corpus flow to.

Run once, by hand, with Apple's own code on the path (nothing installed)::

    git --git-dir=<mirror of Liam0205/pineapple> archive <commit> apple apple_generated \
        | tar -x -C /tmp/apple-src
    PYTHONPATH=/tmp/apple-src python tests/dsl/apple_flows/_generate.py <commit>

It records the Apple version and commit in ``APPLE_VERSION.json``. The tests
never import Apple: they compare these files with what ``dsl`` compiles.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(commit: str) -> None:
    import apple  # Apple's package, from PYTHONPATH

    for path in sorted(HERE.glob("flow_*.py")):
        flow = runpy.run_path(str(path))["flow"]
        config = flow.compile_dict()
        out = path.with_suffix(".expected.json")
        out.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")
        print(f"wrote {out.name}")
    record = {
        "apple_version": apple.__version__,
        "commit": commit,
        "repository": "Liam0205/pineapple",
    }
    (HERE / "APPLE_VERSION.json").write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
