"""Issue 11, item 9: masking 1 MB of text takes under 50 ms.

Two texts of 1 MB each: random letters and digits (what made the old,
quadratic DSN regex take seconds per 100 KB), and log-like lines that each
hold a URL DSN and a Go DSN whose passwords contain ``@`` and spaces, with
three known literal secrets (as a Manager's slot has). The figure is the
median of interleaved rounds of ``pineapple.resource.lowlevel.redact``.
"""

from __future__ import annotations

import random
import string

from pineapple.resource.lowlevel import redact

from ._measure import Result, interleaved

__all__ = ["masking", "masking_texts"]

TARGET_SECONDS = 0.050
SIZE = 1_000_000
SECRETS = ("tbl_EnvTableS3cret", "10.1.2.3", "hunter2-token")


def masking_texts(size: int = SIZE) -> dict[str, str]:
    """The benchmark's texts, ``size`` characters each, by name."""
    rng = random.Random(9)
    alnum = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(size))
    line = (
        "{n} refresh of feed_data/feed failed: dial mysql://app:p@ss w0rd@db:3306/feed "
        "and root:s3 cr@t@tcp(10.1.2.3:3306)/feed; table tbl_EnvTableS3cret; " + "{pad}\n"
    )
    lines: list[str] = []
    total = 0
    while total < size:  # bounded: each line adds > 100 characters
        text = line.format(n=len(lines), pad=alnum[total % 1000 : total % 1000 + 60])
        lines.append(text)
        total += len(text)
    return {"letters+digits": alnum, "log lines with DSNs": "".join(lines)[:size]}


def masking() -> list[Result]:
    """Median time of ``redact`` over each 1 MB text, against the 50 ms target."""
    texts = masking_texts()
    for text in texts.values():
        out = redact(text, SECRETS)
        if "w0rd" in out or "cr@t" in out or "S3cret" in out:
            raise AssertionError("a secret survived masking")
    fns = {name: (lambda t=text: redact(t, SECRETS)) for name, text in texts.items()}
    t = interleaved(fns, rounds=9)
    return [
        Result(
            9,
            f"mask 1 MB of {name} / 50 ms",
            seconds / TARGET_SECONDS,
            1.0,
            f"{seconds * 1e3:.1f} ms per MB (pineapple.resource.lowlevel.redact, 3 known secrets)",
        )
        for name, seconds in t.items()
    ]
