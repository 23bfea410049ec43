"""A complete Pineapple plugin: one resource type and one operator that uses it.

- resource type ``word_list``: the words of a text file (one per line, ``#``
  comments), reloaded when the file changes;
- operator ``filter_word_list``: removes the items whose field is in that list.

Use it with ``--plugin wordlist_plugin`` (from this folder) or
``--plugin path/to/wordlist_plugin.py``. The docs ``writing-a-resource-type.md``
and ``writing-an-operator.md`` walk through it; the test suite runs it.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from pineapple import (
    Context,
    ParamSpec,
    ResourceSchema,
    register_operator,
    register_resource,
    resource,
)
from pineapple.engine import Operator, OperatorInput, OperatorOutput, OperatorSchema

# --- the value ---------------------------------------------------------------


class WordList:
    """An immutable set of words; readers only call ``in`` and ``len``."""

    def __init__(self, words: frozenset[str], source: str) -> None:
        self.words = words
        self.source = source
        self.closed = False

    def __contains__(self, word: object) -> bool:
        return word in self.words

    def __len__(self) -> int:
        return len(self.words)

    def close(self) -> None:
        # Called once, after the last reader released this value (nothing to free
        # here; a pool or a file handle would be closed now).
        self.closed = True


# --- the fetcher -------------------------------------------------------------


class WordListFetcher:
    """Reads the file; returns ``NOT_MODIFIED`` while it is unchanged."""

    def __init__(self, path: str, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._seen: tuple[int, int, int] | None = None
        self._lock = threading.Lock()  # one fetch at a time is the Manager's rule; be safe

    def __call__(self) -> WordList | object:
        with self._lock:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            if stamp == self._seen:
                return resource.NOT_MODIFIED
            if st.st_size > self.max_bytes:
                raise ValueError(f"{self.path}: {st.st_size} bytes, over max_bytes")
            with open(self.path, encoding="utf-8") as fh:
                text = fh.read(self.max_bytes + 1)  # bounded read
            words = frozenset(
                line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"
            )
            self._seen = stamp
            return WordList(words, self.path)

    def carry_over(self, value: WordList) -> None:
        # On a config reload that keeps this entry, the new fetcher inherits the
        # served value: remember its file so an unchanged file stays NOT_MODIFIED.
        if value.source == self.path:
            st = os.stat(self.path)
            self._seen = (st.st_mtime_ns, st.st_size, st.st_ino)

    def close(self) -> None:
        # Called once by Manager.stop() (nothing held between fetches here).
        pass


class WordListPrinter:
    """What ``GET /resources`` shows (never a secret)."""

    def summarize(self, value: WordList) -> str:
        return f"word_list: {len(value)} words from {value.source}"

    def describe(self, value: WordList) -> str:
        sample = ", ".join(sorted(value.words)[:10])
        return f"{self.summarize(value)}\nfirst words: {sample}"


def word_list_factory(params: dict[str, Any]) -> WordListFetcher:
    """Params in (validated, defaults applied), a zero-argument fetcher out. No I/O here."""
    if params["max_bytes"] <= 0:
        raise ValueError("max_bytes must be positive")
    return WordListFetcher(params["path"], params["max_bytes"])


register_resource(
    ResourceSchema(
        name="word_list",
        description="The words of a text file (one per line), reloaded when it changes.",
        default_interval=60,
        params={
            "path": ParamSpec(type="string", required=True, description="The text file."),
            "max_bytes": ParamSpec(
                type="int", default=1 << 20, description="Refuse larger files (bytes)."
            ),
        },
        printer=WordListPrinter(),
    ),
    word_list_factory,
)

# --- the operator ------------------------------------------------------------


class FilterWordList(Operator):
    """Removes items whose ``item_input[0]`` is in the ``word_list`` resource."""

    concurrent_safe = True
    consumes_row_set = True
    mutates_row_set = True

    def __init__(self, params: dict[str, Any]) -> None:
        self.resource_name: str = params["resource_name"]

    def prepare(self) -> None:
        self.field = self.meta.first("item_input", "filter_word_list")

    def execute(self, ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
        provider = resource.from_context(ctx)
        handle = provider.get(self.resource_name) if provider is not None else None
        if handle is None:
            raise LookupError(f"filter_word_list: resource {self.resource_name!r} not loaded")
        with handle as words:  # released on return and on raise
            drop = [i for i, v in enumerate(inp.column(self.field)) if v in words]
        out.remove_items(drop)


register_operator(
    OperatorSchema(
        name="filter_word_list",
        kind="filter",
        description="Removes items whose field is one of the words of a word_list resource.",
        params={
            "resource_name": ParamSpec(
                type="string", required=True, description="A word_list resource."
            ),
        },
    ),
    FilterWordList,
)
