"""The ``resource_name`` param of the operators that read a named resource of any type.

``recall_resource`` and ``transform_resource_lookup`` declare it with this
one spec; an operator that needs a resource of one type says which in its
own description (the Redis operators', ``recall_feed_data``'s).
"""

from __future__ import annotations

from .._params import ParamSpec

__all__ = ["RESOURCE_NAME_PARAM"]

RESOURCE_NAME_PARAM = ParamSpec(
    type="string", required=True, description="Name of the resource to read."
)
