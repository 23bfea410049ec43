"""Built-in resource types; importing this package registers every one of them.

This is the Go ``init()`` pattern: each module below calls
``pineapple.register_resource`` at import time. Business packages register
their own types the same way, or through the ``pineapple.resources``
entry-point group.

Types:
    static              a constant value from the config
    redis_connection    a shared ``redis.Redis`` client (``RedisConnection``) owning its pool
"""

from . import _redis, _static
from ._errors import SourceError as SourceError
from ._redis import REDIS_CONNECTION_SCHEMA as REDIS_CONNECTION_SCHEMA
from ._redis import RedisConnection as RedisConnection
from ._redis import RedisConnectionFetcher as RedisConnectionFetcher
from ._static import STATIC_SCHEMA as STATIC_SCHEMA

__all__ = [
    "REDIS_CONNECTION_SCHEMA",
    "STATIC_SCHEMA",
    "RedisConnection",
    "RedisConnectionFetcher",
    "SourceError",
]

del _redis, _static
