"""Built-in resource types; importing this package registers every one of them.

This is the Go ``init()`` pattern: each module below calls
``pineapple.register_resource`` at import time. Business packages register
their own types the same way, or through the ``pineapple.resources``
entry-point group. :mod:`pineapple.builtins` is the one place that imports
this package for the server, the CLI and codegen.

Types (value shape):
    static              the ``value`` param as given
    redis_connection    ``RedisConnection``: a ``redis.Redis`` owning its pool
    feed_data           ``FeedTable``: a columnar table with bitmap indices (with
                        ``--workers``, a ``MappedFeedTable`` read from a shared snapshot)
    json_file/csv_file  ``FileMapping`` (a dict: lookup table) or ``FileRows``
                        (a list of item dicts: candidates)

feed_data, json_file and csv_file declare a codec: ``serve --workers N``
fetches them once and shares them with every worker.

The face lists what a user of a built-in type touches: the values above,
the fetchers code can ``Manager.register``, and their errors. The schemas,
codecs, table builders, sources and DSN parsing are :mod:`resources.lowlevel`.
"""

from . import _feed_data, _file_tables, _recall_feed_data, _redis, _static
from . import lowlevel as lowlevel
from ._errors import SourceError as SourceError
from ._feed_data import FeedDataFetcher as FeedDataFetcher
from ._feed_table import FeedQueryError as FeedQueryError
from ._feed_table import FeedTable as FeedTable
from ._file_tables import FileMapping as FileMapping
from ._file_tables import FileRows as FileRows
from ._file_tables import FileTableFetcher as FileTableFetcher
from ._mapped_table import MappedFeedTable as MappedFeedTable
from ._redis import RedisConnection as RedisConnection
from ._redis import RedisConnectionFetcher as RedisConnectionFetcher

__all__ = [
    "FeedDataFetcher",
    "FeedQueryError",
    "FeedTable",
    "FileMapping",
    "FileRows",
    "FileTableFetcher",
    "MappedFeedTable",
    "RedisConnection",
    "RedisConnectionFetcher",
    "SourceError",
]

del _feed_data, _file_tables, _recall_feed_data, _redis, _static
