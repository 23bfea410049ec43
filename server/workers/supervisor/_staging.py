"""``Staging``: what a candidate config's fetchers publish, held back until it is accepted.

Under ``--workers N`` a store entry's key is a hash of its name, type and params
(``entry_key``), so a reload that changes an entry in any other way (its
``interval``, its ``validate`` block) fetches it again under the *same* key.
Were that value published at once, every worker would map it on its next
follow, and a reload refused afterwards (a trial that could not build it,
``server/workers/supervisor/_trial.py``) would still have changed what the pod serves. So the
fetchers of a candidate config publish through a :class:`Staging`: a value
whose key the manifest already names is written to files of its own and
kept here; the store names it in the manifest together with the config
generation that accepts it (one manifest write, ``SharedStore.publish_config``)
or deletes its files when the config is refused (``SharedStore.refuse``).
A key the manifest does not name yet is published at once: no config names
it, so no worker opens it before the config that does is accepted.

Guarantees:
- ``state`` and ``entries`` change only under the store's lock.
- Once accepted, the same fetchers publish directly (they serve now); once
  refused, a straggling publish is refused too (``SnapshotWriteError``), so
  nothing of a refused config ever reaches the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Staging"]


@dataclass
class Staging:
    """The held-back publishes of one candidate config (see module docs)."""

    state: Literal["staging", "accepted", "refused"] = "staging"
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``key -> manifest entry`` written but not yet named in the manifest."""
