"""Built-in operators (importing this package registers them).

Each module holds one operator: its ``OperatorSchema`` (``SCHEMA``), its
class, and the ``register_operator`` call. The Lua runtime behind
``transform_by_lua`` is the private package ``_lua``; the private modules
hold what several operators share: ``_redis`` (borrowing a client, running
commands within the deadline) and ``_redis_operator`` (the Redis operators'
base class and common params), ``_resource_param``, ``_salted_hash``, and
``_ssrf`` / ``_guarded_http`` (``transform_by_remote_pineapple``'s guarded
HTTP client).

This package imports only :mod:`pineapple.engine` and the core below it (never
``resources`` or a server); :mod:`pineapple.builtins` is the one place that
imports it together with the built-in resource types.
"""

from importlib import import_module

_MODULES = (
    "filter_condition",
    "filter_paginate",
    "filter_truncate",
    "merge_dedup",
    "observe_log",
    "recall_resource",
    "recall_static",
    "reorder_shuffle_by_salt",
    "reorder_sort",
    "reorder_topn_boost",
    "transform_bench_cpu",
    "transform_bench_sleep",
    "transform_by_lua",
    "transform_by_remote_pineapple",
    "transform_copy",
    "transform_dispatch",
    "transform_normalize",
    "transform_redis_get",
    "transform_redis_set",
    "transform_redis_zrangebyscore",
    "transform_resource_lookup",
    "transform_size",
)

for _name in _MODULES:
    import_module(f"{__name__}.{_name}")

__all__: list[str] = []
