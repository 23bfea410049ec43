"""How a shadowed request's two answers differ: the live config's and the candidate's.

A staged candidate (``server/_shadow.py``) answers a share of the live
``/execute`` requests off the response path; :func:`compare` sets its answer
beside the live one. Items are matched by their ``id`` when every item of
both answers has one (else by their whole JSON), and the difference is
counted as:

- ``added``: items only the candidate answers; ``removed``: only the live one;
- ``moved``: items both answer whose rank among the items both answer differs
  (a reversed sort order moves every item but the middle one);
- ``fields``: items both answer whose fields differ; ``common``: whether the
  answers' ``common`` differ;
- the outcome: ``same``, ``changed`` (any of the above, or a live failure the
  candidate answers), ``error`` (the candidate failed where the live config
  answered 200) or ``both_failed``.

Bounds: the work is linear in the two answers' items, each bounded by the
server's ``--max-answer-bytes``; at most ``MAX_EXAMPLE_IDS`` ids of each kind
are kept for an example.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

__all__ = ["MAX_EXAMPLE_IDS", "Difference", "Outcome", "compare"]

MAX_EXAMPLE_IDS = 5
"""The most item ids of each kind (added, removed, moved, changed) an example names."""

Outcome = Literal["same", "changed", "error", "both_failed"]


@dataclass
class Difference:
    """How one request's candidate answer differs from the live one (see module docs)."""

    outcome: Outcome
    added: int = 0
    removed: int = 0
    moved: int = 0
    fields: int = 0
    common: bool = False
    live_status: int = 200
    candidate_status: int = 200
    ids: dict[str, list[str]] = field(default_factory=dict)
    """Up to ``MAX_EXAMPLE_IDS`` ids per kind (``added``, ``removed``, ``moved``, ``fields``)."""

    def to_dict(self) -> dict[str, Any]:
        """The JSON of one example in ``GET /config/candidate``."""
        return {
            "outcome": self.outcome,
            "live_status": self.live_status,
            "candidate_status": self.candidate_status,
            "added": self.added,
            "removed": self.removed,
            "moved": self.moved,
            "fields_changed": self.fields,
            "common_changed": self.common,
            "ids": self.ids,
        }


def compare(live: tuple[int, bytes], candidate: tuple[int, bytes]) -> Difference:
    """The difference of ``candidate``'s answer (status, bytes) from ``live``'s."""
    (live_status, live_body), (cand_status, cand_body) = live, candidate
    if cand_status != 200:
        outcome: Outcome = "both_failed" if live_status != 200 else "error"
        return Difference(outcome, live_status=live_status, candidate_status=cand_status)
    if live_status != 200:  # the candidate answers what the live config fails
        return Difference("changed", live_status=live_status, candidate_status=cand_status)
    if live_body == cand_body:
        return Difference("same")
    old, new = _parsed(live_body), _parsed(cand_body)
    diff = _items(old.get("items"), new.get("items"))
    diff.common = old.get("common") != new.get("common")
    changed = diff.added or diff.removed or diff.moved or diff.fields or diff.common
    # Equal parsed answers with different bytes (key order, spacing): the same answer.
    diff.outcome = "changed" if changed else "same"
    return diff


def _parsed(body: bytes) -> dict[str, Any]:
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {"common": body.decode("utf-8", "replace")}  # compared as one opaque value
    return answer if isinstance(answer, dict) else {"common": answer}


def _keys(items: list[Any]) -> list[str]:
    """Each item's key: its ``id`` when every item has one, else its whole JSON."""
    ids = [item.get("id") if isinstance(item, dict) else None for item in items]
    if all(i is not None for i in ids):
        return [i if isinstance(i, str) else orjson.dumps(i).decode() for i in ids]
    return [orjson.dumps(item, option=orjson.OPT_SORT_KEYS).decode() for item in items]


def _items(old: Any, new: Any) -> Difference:
    old_items = old if isinstance(old, list) else []
    new_items = new if isinstance(new, list) else []
    old_keys, new_keys = _keys(old_items), _keys(new_items)
    old_at = {key: i for i, key in enumerate(old_keys)}  # a repeated key: its last place
    new_at = {key: i for i, key in enumerate(new_keys)}
    added = [k for k in new_keys if k not in old_at]
    removed = [k for k in old_keys if k not in new_at]
    both_old = [k for k in old_keys if k in new_at]
    both_new = [k for k in new_keys if k in old_at]
    moved = [k for k, other in zip(both_old, both_new, strict=False) if k != other]
    changed = [k for k in both_old if old_items[old_at[k]] != new_items[new_at[k]]]
    diff = Difference("changed", len(added), len(removed), len(moved), len(changed))
    for kind, keys in (("added", added), ("removed", removed), ("moved", moved)):
        if keys:
            diff.ids[kind] = [k[:128] for k in keys[:MAX_EXAMPLE_IDS]]
    if changed:
        diff.ids["fields"] = [k[:128] for k in changed[:MAX_EXAMPLE_IDS]]
    return diff
