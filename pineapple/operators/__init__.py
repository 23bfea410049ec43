"""Built-in operators (importing this package registers them).

Each module holds one operator: its ``OperatorSchema`` (``SCHEMA``), its
class, and the ``register_operator`` call. ``transform_by_lua`` lives in its
own module, written separately.
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
_OPTIONAL = ("transform_by_lua",)

for _name in _MODULES:
    import_module(f"{__name__}.{_name}")
for _name in _OPTIONAL:
    try:
        import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _exc:
        if _exc.name != f"{__name__}.{_name}":
            raise

__all__: list[str] = []
