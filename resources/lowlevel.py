"""The built-in types' plumbing: schemas, codecs, table builders, sources, DSNs.

The face (:mod:`resources`) holds what a user of a built-in type touches:
the values it lends (``FeedTable``, ``MappedFeedTable``, ``FileMapping``,
``FileRows``, ``RedisConnection``), the fetchers that code can register
with a Manager, and their errors. This module holds what the server,
benchmarks and type authors build on:

- the schemas as registered (``STATIC_SCHEMA``, ``FEED_DATA_SCHEMA``,
  ``JSON_FILE_SCHEMA``, ``CSV_FILE_SCHEMA``, ``REDIS_CONNECTION_SCHEMA``);
- how ``serve --workers N`` shares a data type (``FEED_CODEC``,
  ``FILE_CODEC``) and the Arrow snapshot of a table behind it
  (``write_feed_snapshot``, ``open_mapped_table``);
- building a ``FeedTable`` from row chunks (``build_feed_table``) and the
  sources rows come from (``MySQLSource``, ``PostgresSource``, ``SQLiteSource``);
- MySQL DSNs in the Go and the URL form (``parse_mysql_dsn``, ``MySQLDSN``) and
  PostgreSQL URLs (``parse_postgres_dsn``, ``PostgresDSN``).
"""

from ._dsn import MySQLDSN as MySQLDSN
from ._dsn import parse_mysql_dsn as parse_mysql_dsn
from ._feed_builder import build_feed_table as build_feed_table
from ._feed_data import FEED_DATA_SCHEMA as FEED_DATA_SCHEMA
from ._feed_source import MySQLSource as MySQLSource
from ._feed_source import SQLiteSource as SQLiteSource
from ._file_tables import CSV_FILE_SCHEMA as CSV_FILE_SCHEMA
from ._file_tables import JSON_FILE_SCHEMA as JSON_FILE_SCHEMA
from ._mapped_table import open_mapped_table as open_mapped_table
from ._mapped_table import write_feed_snapshot as write_feed_snapshot
from ._pg_dsn import PostgresDSN as PostgresDSN
from ._pg_dsn import parse_postgres_dsn as parse_postgres_dsn
from ._pg_source import PostgresSource as PostgresSource
from ._redis import REDIS_CONNECTION_SCHEMA as REDIS_CONNECTION_SCHEMA
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
    "MySQLDSN",
    "MySQLSource",
    "PostgresDSN",
    "PostgresSource",
    "SQLiteSource",
    "build_feed_table",
    "open_mapped_table",
    "parse_mysql_dsn",
    "parse_postgres_dsn",
    "write_feed_snapshot",
]
