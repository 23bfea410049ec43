"""Issue 21, item 12: the condition tokenizer is linear, and finds what it found before."""

from __future__ import annotations

import random
import re
import time

import pytest

from dsl._condition import _tokens, condition_fields

pytestmark = pytest.mark.timeout(120)

# The tokenizer before the fix: right, but quadratic where a long bracket or
# a string does not close (each later opening scanned to the end again).
_OLD = re.compile(
    r"""
      (?P<marker>\{\{\w+\}\})
    | (?P<comment>--\[(?P<ceq>=*)\[.*?\](?P=ceq)\]|--[^\n]*)
    | (?P<long>\[(?P<eq>=*)\[.*?\](?P=eq)\])
    | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
    | (?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    | (?P<name>[A-Za-z_]\w*)
    | (?P<space>\s+)
    | (?P<op>\.\.\.?|==|~=|<=|>=|.)
    """,
    re.VERBOSE | re.DOTALL,
)
_OUTER = ("marker", "comment", "long", "string", "number", "name", "space", "op")


def _old_tokens(condition: str) -> list[tuple[str, str]]:
    found = []
    for match in _OLD.finditer(condition):
        kind = next(k for k in _OUTER if match.group(k) is not None)
        if kind not in ("space", "comment"):
            found.append((kind, match.group()))
    return found


ALPHABET = ["[", "]", "=", "-", '"', "'", "\\", "\n", " ", "{", "}", "a", "x1", "1", ".", "~"]


@pytest.mark.parametrize("seed", range(20))
def test_the_tokens_are_the_old_tokenizers(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(500):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 30)))
        assert _tokens(text) == _old_tokens(text), repr(text)


@pytest.mark.parametrize(
    "condition",
    [
        "a == [[x]] and b",
        "a == [==[x]]y]==] or c",
        "--[[ note ]] score > 1",
        "--[[ open\nscore > 1",
        "s == \"a\\\"b\" and t == 'c\\'d'",
        "{{user}} == 'vip' and n > 0x1F",
        "x..y ~= z",
    ],
)
def test_familiar_conditions(condition: str) -> None:
    assert _tokens(condition) == _old_tokens(condition)


SIZE = 160_000
ADVERSARIAL = {
    "unclosed-long-brackets": "[[" * (SIZE // 2),
    "unclosed-leveled-brackets": "[=[" * (SIZE // 3),
    "unclosed-long-comments": "a --[[" * (SIZE // 6),
    "escaped-quotes": '"' + '\\"' * (SIZE // 2),
    "escaped-single-quotes": "'" + "\\'" * (SIZE // 2),
    "open-markers": "{{a" * (SIZE // 3),
}


@pytest.mark.parametrize("text", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_160_kb_that_never_closes_is_tokenized_in_linear_time(text: str) -> None:
    # The old tokenizer took 0.9 s on 16 KB of "[[" (quiet machine) and grew
    # with the square of the size: some 90 s for these 160 KB.
    # CPU time of this process: what the tokenizer spends, however busy the machine.
    started = time.process_time()
    condition_fields(text)
    assert time.process_time() - started < 10.0  # about 0.5 s
