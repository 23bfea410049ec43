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

feed_data, json_file and csv_file declare a codec (``FEED_CODEC``, ``FILE_CODEC``):
``serve --workers N`` fetches them once and shares them with every worker.
"""

from . import _feed_data, _file_tables, _recall_feed_data, _redis, _static
from ._dsn import MySQLDSN as MySQLDSN
from ._dsn import parse_mysql_dsn as parse_mysql_dsn
from ._errors import SourceError as SourceError
from ._feed_builder import build_feed_table as build_feed_table
from ._feed_data import FEED_DATA_SCHEMA as FEED_DATA_SCHEMA
from ._feed_data import FeedDataFetcher as FeedDataFetcher
from ._feed_source import MySQLSource as MySQLSource
from ._feed_source import SQLiteSource as SQLiteSource
from ._feed_table import FeedQueryError as FeedQueryError
from ._feed_table import FeedTable as FeedTable
from ._file_tables import CSV_FILE_SCHEMA as CSV_FILE_SCHEMA
from ._file_tables import JSON_FILE_SCHEMA as JSON_FILE_SCHEMA
from ._file_tables import FileMapping as FileMapping
from ._file_tables import FileRows as FileRows
from ._file_tables import FileTableFetcher as FileTableFetcher
from ._mapped_table import MappedFeedTable as MappedFeedTable
from ._mapped_table import SnapshotFormatError as SnapshotFormatError
from ._mapped_table import SnapshotWriteError as SnapshotWriteError
from ._mapped_table import open_mapped_table as open_mapped_table
from ._mapped_table import write_feed_snapshot as write_feed_snapshot
from ._redis import REDIS_CONNECTION_SCHEMA as REDIS_CONNECTION_SCHEMA
from ._redis import RedisConnection as RedisConnection
from ._redis import RedisConnectionFetcher as RedisConnectionFetcher
from ._shared import FEED_CODEC as FEED_CODEC
from ._shared import FILE_CODEC as FILE_CODEC
from ._static import STATIC_SCHEMA as STATIC_SCHEMA

__all__ = [
    "CSV_FILE_SCHEMA",
    "FEED_CODEC",
    "FEED_DATA_SCHEMA",
    "FILE_CODEC",
    "JSON_FILE_SCHEMA",
    "REDIS_CONNECTION_SCHEMA",
    "STATIC_SCHEMA",
    "FeedDataFetcher",
    "FeedQueryError",
    "FeedTable",
    "FileMapping",
    "FileRows",
    "FileTableFetcher",
    "MappedFeedTable",
    "MySQLDSN",
    "MySQLSource",
    "RedisConnection",
    "RedisConnectionFetcher",
    "SQLiteSource",
    "SnapshotFormatError",
    "SnapshotWriteError",
    "SourceError",
    "build_feed_table",
    "open_mapped_table",
    "parse_mysql_dsn",
    "write_feed_snapshot",
]

del _feed_data, _file_tables, _recall_feed_data, _redis, _static
