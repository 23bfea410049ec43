"""``feed_data``: a whole item table from MySQL/MariaDB, PostgreSQL or SQLite, with bitmap indices.

The DSN's scheme picks the database: ``postgresql://`` (or ``postgres://``)
reads PostgreSQL (``_pg_source``), ``mysql://`` or the Go driver's form
MySQL (``_feed_source``), in ``dsn`` or ``mysql_dsn`` alike.

The value is a :class:`FeedTable`. A ``version_query`` (e.g. ``SELECT
MAX(updated_at), COUNT(*) FROM t``) makes refreshes cheap: when its answer
equals the one of the last successful load, the fetcher returns
``NOT_MODIFIED`` and the table is not read again.

Each load (version query, query, rows, build) ends within ``load_timeout_ms``
(a :class:`~resources._deadline.LoadDeadline`), whichever loader reads it.
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import orjson

from pineapple import ConfigError, ParamSpec, ResourceSchema, register_resource
from pineapple.resource import NOT_MODIFIED
from pineapple.resource.lowlevel import redact

from ._deadline import DEFAULT_LOAD_SECONDS, LoadDeadline
from ._dsn import parse_mysql_dsn
from ._errors import SourceError
from ._feed_builder import build_feed_table
from ._feed_delta import SINCE, delta_sql
from ._feed_source import MySQLSource, RowSource, SQLiteSource, Stream
from ._feed_table import FeedTable
from ._mapped_table import MappedFeedTable
from ._pacing import Pacer
from ._pg_dsn import POSTGRES_SCHEMES, parse_postgres_dsn
from ._pg_source import PostgresSource
from ._printing import human_bytes
from ._shared import FEED_CODEC

__all__ = ["DEFAULT_TABLE", "FEED_DATA_SCHEMA", "FeedDataFetcher", "FeedDataPrinter"]

DEFAULT_TABLE = "recommend_feed_item"
DELTA_FULL_EVERY = 12
"""Delta reads in a row before a full read (which also drops deleted rows)."""
_log = logging.getLogger("pineapple.resource")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$")


def _is_postgres(dsn: str) -> bool:
    return dsn.strip().split("://", 1)[0].lower() in POSTGRES_SCHEMES if "://" in dsn else False


def _quote(table: str, mysql: bool) -> str:
    q = "`" if mysql else '"'
    return ".".join(f"{q}{part}{q}" for part in table.split("."))


def _positive_ms(params: dict[str, Any], name: str, default: int) -> float:
    """A timeout param in seconds; 0 or below is refused (it would mean "wait forever")."""
    value = params.get(name, default)
    if value <= 0:
        raise ConfigError(f"parameter {name!r}: must be > 0 milliseconds, got {value}")
    return float(value) / 1000.0


class FeedDataFetcher:
    """Loads the whole table (or ``query``) into a :class:`FeedTable` per call.

    Construction validates params and does no I/O; ``cancel()`` stops a load
    in flight and ``close()`` closes the database connection (the Manager
    calls both on stop).
    """

    def __init__(self, params: dict[str, Any]) -> None:
        given = [name for name in ("dsn", "mysql_dsn", "sqlite_path") if params.get(name)]
        if len(given) > 1:
            raise ConfigError(
                f"parameters {' and '.join(repr(g) for g in given)}: give exactly one"
            )
        if not given:
            raise ConfigError("parameter 'dsn' (or 'mysql_dsn', or 'sqlite_path') is required")
        dsn_param = given[0] if given[0] != "sqlite_path" else None
        dsn = str(params[dsn_param]) if dsn_param else None
        sqlite_path = params.get("sqlite_path")
        table, query = params.get("table"), params.get("query")
        if table and query:
            raise ConfigError("parameters 'table' and 'query': give one, not both")
        index_columns = params.get("index_columns") or []
        if not all(isinstance(c, str) and c for c in index_columns):
            raise ConfigError("parameter 'index_columns': must be a list of column names")
        self.index_columns: list[str] = list(dict.fromkeys(index_columns))
        self.id_column: str = params.get("id_column") or "id"
        order_columns = params.get("order_columns") or []
        if not all(isinstance(c, str) and c for c in order_columns):
            raise ConfigError("parameter 'order_columns': must be a list of column names")
        self.order_columns: list[str] = list(dict.fromkeys(order_columns))
        self.version_query: str | None = params.get("version_query") or None
        self.delta_query: str | None = params.get("delta_query") or None
        self.delta_column: str | None = params.get("delta_column") or None
        self.delta_full_every: int = _delta_params(params, self.delta_query, self.delta_column)
        loader = params.get("loader") or "process"
        if loader not in ("process", "thread", "arrow"):
            raise ConfigError(
                f"parameter 'loader': must be 'process', 'thread' or 'arrow', not {loader!r}"
            )
        self.loader: str = loader
        nice = params.get("loader_nice")
        connect_timeout = _positive_ms(params, "connect_timeout_ms", 5000)
        read_timeout = _positive_ms(params, "read_timeout_ms", 60000)
        self.load_timeout = _positive_ms(
            params, "load_timeout_ms", int(DEFAULT_LOAD_SECONDS * 1000)
        )
        self.source: RowSource
        postgres = bool(dsn) and _is_postgres(str(dsn))
        if loader == "arrow" and (not dsn or postgres):
            raise ConfigError("parameter 'loader': 'arrow' reads MySQL (mysql_dsn) only")
        if self.delta_query and loader != "arrow":
            raise ConfigError(
                "parameter 'delta_query': needs 'loader': 'arrow' (the delta is merged into"
                " the mapped table it writes)"
            )
        if dsn and dsn_param and postgres:
            self.source = PostgresSource(
                parse_postgres_dsn(dsn, dsn_param),
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                load_timeout=self.load_timeout,
                in_process=loader == "thread",
                loader_nice=10 if nice is None else nice,
            )
        elif dsn and dsn_param:
            parsed = parse_mysql_dsn(dsn, dsn_param)
            if loader == "arrow" and parsed.unix_socket:
                raise ConfigError(
                    "parameter 'loader': 'arrow' connects over TCP; 'mysql_dsn' names a unix socket"
                )
            self.source = MySQLSource(
                parsed,
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                in_process=loader == "thread",
                loader_nice=10 if nice is None else nice,
            )
        else:
            self.source = SQLiteSource(str(sqlite_path))
        if query:
            self.sql = str(query)
        else:
            table = table or DEFAULT_TABLE
            if not _IDENTIFIER.match(table):
                raise ConfigError(f"parameter 'table': not a table name: {table!r}")
            self.sql = f"SELECT * FROM {_quote(table, mysql=bool(dsn) and not postgres)}"
        self._version: tuple[Any, ...] | None = None
        self._has_version = False
        self._base: FeedTable | None = None
        """The table served (``commit``, ``carry_over``): what a delta read is merged into."""
        self._deltas = 0
        """Delta reads since the last full read."""
        self._cancelled = False  # set by cancel() from another thread; only ever turns True

    def __call__(self) -> FeedTable | object:
        started = time.monotonic()
        deadline = LoadDeadline(self.load_timeout)
        version = None
        if self.version_query:
            version = self.source.scalar_row(self.version_query, deadline)
            if self._has_version and _same_version(version, self._version):
                return NOT_MODIFIED
        if isinstance(self.source, MySQLSource) and self.loader == "arrow":
            table: FeedTable = self._read_arrow(self.source, version, deadline)
            table.version = version
            table.load_seconds = time.monotonic() - started
        else:
            table = self.source.read(
                self.sql, lambda stream: self._build(stream, version, started, deadline), deadline
            )
        self._version, self._has_version = version, self.version_query is not None
        return table

    def _read_arrow(self, source: MySQLSource, version: Any, deadline: LoadDeadline) -> FeedTable:
        """A full read, or a delta read merged into the table served (``_feed_delta``)."""
        base = self._base
        since = None
        if (
            self.delta_query
            and self.delta_column
            and isinstance(base, MappedFeedTable)
            and self._deltas < self.delta_full_every
        ):
            since = base.column_max(self.delta_column)
        if since is None or not isinstance(base, MappedFeedTable):
            table = source.read_snapshot(self.sql, self._spec(version), deadline)
            self._deltas = 0
            return table
        assert self.delta_query is not None
        sql = delta_sql(self.delta_query, since)
        try:
            spec = {**self._spec(version), "base": str(base.path)}
            table = source.read_snapshot(sql, spec, deadline)
        except (SourceError, ConfigError):
            self._deltas = self.delta_full_every  # the next read is full
            raise
        self._deltas += 1
        _log.info(
            "%s: delta read since %s=%r merged into %d rows (%d now)",
            source.where,
            self.delta_column,
            since,
            len(base),
            len(table),
        )
        return table

    def _spec(self, version: Any) -> dict[str, Any]:
        """What the Arrow loader builds: the checked columns, indices, ranks and version."""
        return {
            "check": self._check_columns,
            "id_column": self.id_column,
            "index_columns": self.index_columns,
            "order_columns": self.order_columns,
            "version": version,
        }

    def _check_columns(self, names: list[str]) -> None:
        """ConfigError when the query's columns repeat a name or lack one the params name."""
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError(f"the query returns duplicate column names: {duplicates}")
        known = set(names)
        if self.id_column not in known:
            raise ConfigError(
                f"parameter 'id_column': unknown column {self.id_column!r} (columns: {names})"
            )
        for param, wanted in (
            ("index_columns", self.index_columns),
            ("order_columns", self.order_columns),
            ("delta_column", [self.delta_column] if self.delta_column else []),
        ):
            unknown = [c for c in wanted if c not in known]
            if unknown:
                raise ConfigError(
                    f"parameter {param!r}: unknown column(s) {unknown} (columns: {names})"
                )

    def _build(
        self, stream: Stream, version: Any, started: float, deadline: LoadDeadline
    ) -> FeedTable:
        names = stream.names
        self._check_columns(names)
        pacer = Pacer()  # request threads keep the interpreter while this loads

        def pause() -> None:
            # The build's loops pause every few hundred rows: a cancel or the
            # deadline stops them there.
            if self._cancelled:
                raise SourceError(f"{self.source.where}: load cancelled (stopping)")
            if deadline.expired:
                raise SourceError(f"{self.source.where}: {deadline.text()}")
            pacer()

        table = build_feed_table(
            names,
            stream.chunks,
            self.id_column,
            self.index_columns,
            float_columns=stream.float_columns,
            columnar=stream.columnar,
            pause=pause,
            value_bytes=stream.value_bytes,
            version=version,
            source=self.source.where,
        )
        for column in self.order_columns:
            table.prepare_order(column, pause)
        table.load_seconds = time.monotonic() - started
        return table

    def carry_over(self, value: Any) -> None:
        """Resume change detection from a table a config reload carried over (or that a
        refusal or a rollback kept serving).

        Without this, the first refresh after a reload would read the whole
        table again even when ``version_query`` says nothing changed. A delta
        read is merged into it.
        """
        if self.version_query and isinstance(value, FeedTable) and value.version is not None:
            self._version, self._has_version = value.version, True
        self._base = value if isinstance(value, FeedTable) else None

    def commit(self, value: Any) -> None:
        """``value`` passed every check and serves now: the next delta read merges into it."""
        self._base = value if isinstance(value, FeedTable) else None

    def close(self) -> None:
        """Close the database connection (reopened lazily if fetched again)."""
        self.source.close()

    def cancel(self) -> None:
        """Stop a load in flight, from any thread (the Manager calls it on stop).

        The loader child is killed, or the connection's socket shut down, so
        the fetch raises ``SourceError`` at once; every later fetch fails too.
        """
        self._cancelled = True
        self.source.cancel()


def _delta_params(params: dict[str, Any], query: str | None, column: str | None) -> int:
    """``delta_full_every``, once ``delta_query`` and ``delta_column`` are checked."""
    every = params.get("delta_full_every")
    every = DELTA_FULL_EVERY if every is None else every
    if type(every) is not int or every < 1:
        raise ConfigError(f"parameter 'delta_full_every': must be an integer >= 1, got {every!r}")
    if bool(query) != bool(column):
        raise ConfigError("parameters 'delta_query' and 'delta_column': give both or neither")
    if query and SINCE not in query:
        raise ConfigError(
            f"parameter 'delta_query': must hold {SINCE} (the largest {column!r} of the table"
            " held), e.g. SELECT * FROM t WHERE updated_at > %(since)s"
        )
    return every


def _same_version(a: Any, b: Any) -> bool:
    """Whether two answers of the version query are the same, compared as JSON.

    A version carried over from a shared snapshot went through JSON (a row's
    tuple came back a list, a datetime its ISO text), so both sides are
    compared in that form.
    """
    if a == b:
        return True
    try:
        return orjson.dumps(a, default=str) == orjson.dumps(b, default=str)
    except TypeError:  # not JSON even with str(): only equality counts
        return False


class FeedDataPrinter:
    """Rows, columns, indices, size and source (never a password)."""

    def summarize(self, value: Any) -> str:
        table: FeedTable = value
        indices = ", ".join(f"{c}({n} keys)" for c, n in table.index_sizes().items()) or "none"
        shared = getattr(table, "generation", 0)
        where = f", shared snapshot generation {shared}" if shared else ""
        return redact(
            f"feed_data: {len(table)} rows x {len(table.columns)} columns, indices {indices}, "
            f"~{human_bytes(table.nbytes())}, from {table.source}{where}"
        )

    def describe(self, value: Any) -> str:
        table: FeedTable = value
        lines = [
            self.summarize(table),
            f"columns: {', '.join(table.columns)}",
            f"id column: {table.id_column}",
            f"version: {table.version!r}",
            f"load time: {table.load_seconds:.3f}s",
        ]
        for column, keys in table.index_sizes().items():
            lines.append(f"index {column}: {keys} distinct values")
        return redact("\n".join(lines))

    def size_of(self, value: Any) -> int | None:
        """The table's ``nbytes()`` (every value measured while loading, bitmaps measured)."""
        return value.nbytes() if isinstance(value, FeedTable) else None


FEED_DATA_SCHEMA = ResourceSchema(
    name="feed_data",
    description=(
        "A whole item table held in memory (columnar) with exact-match bitmap indices, "
        "from MySQL/MariaDB or PostgreSQL (dsn, mysql_dsn) or SQLite (sqlite_path); "
        "recalled by recall_feed_data."
    ),
    default_interval=600,
    params={
        "dsn": ParamSpec(
            type="string",
            description="postgresql://user:pass@host:5432/db?opts (PostgreSQL), or any "
            "mysql_dsn form (MySQL): the scheme picks the database.",
        ),
        "mysql_dsn": ParamSpec(
            type="string",
            description="user:pass@tcp(host:3306)/db?opts or mysql://user:pass@host:port/db "
            "(a postgresql:// DSN here reads PostgreSQL, as in dsn).",
        ),
        "sqlite_path": ParamSpec(
            type="string",
            path=True,
            description="Path of a SQLite file (instead of a DSN; relative: to the config "
            "file's folder).",
        ),
        "table": ParamSpec(
            type="string", description=f"Table to load whole (default {DEFAULT_TABLE})."
        ),
        "query": ParamSpec(type="string", description="A SELECT to load instead of a table."),
        "id_column": ParamSpec(type="string", default="id", description="The item id column."),
        "index_columns": ParamSpec(
            type="list",
            description=(
                "Columns with exact-match bitmap indices (default none); a JSON-array or "
                "comma-list cell is indexed under each element."
            ),
        ),
        "order_columns": ParamSpec(
            type="list",
            description="Columns recall orders by; their sort ranks are built at load time.",
        ),
        "version_query": ParamSpec(
            type="string",
            description="A query whose unchanged answer skips the reload (NOT_MODIFIED).",
        ),
        "delta_query": ParamSpec(
            type="string",
            description=(
                "loader 'arrow': a SELECT of the rows changed since the table held, with "
                "%(since)s where the largest delta_column value of that table goes (e.g. "
                "SELECT * FROM t WHERE updated_at > %(since)s); its rows are upserted by "
                "id_column into a copy of the table. Deleted rows need a full read "
                "(delta_full_every)."
            ),
        ),
        "delta_column": ParamSpec(
            type="string",
            description="The column whose largest value in the table held fills %(since)s "
            "(with delta_query).",
        ),
        "delta_full_every": ParamSpec(
            type="int",
            description=f"With delta_query: after this many delta reads in a row (default "
            f"{DELTA_FULL_EVERY}), the next read is full (it drops deleted rows).",
        ),
        "connect_timeout_ms": ParamSpec(
            type="int", default=5000, description="Database connect timeout in ms."
        ),
        "read_timeout_ms": ParamSpec(
            type="int",
            default=60000,
            description="Database read timeout in ms: the longest wait for the server's next "
            "data (PostgreSQL: the next chunk of rows); past it the query is stopped on the "
            "server and the load fails.",
        ),
        "load_timeout_ms": ParamSpec(
            type="int",
            default=int(DEFAULT_LOAD_SECONDS * 1000),
            description="Longest time of one whole load (version query, query, every row, "
            "the build), either loader; past it the query is killed and the load fails.",
        ),
        "loader": ParamSpec(
            type="string",
            default="process",
            description=(
                "Where database rows are parsed: 'process' (a short-lived child process, "
                "so requests keep the interpreter), 'thread' (the refresh thread) or "
                "'arrow' (MySQL: a child process reads the query straight into Arrow with "
                "connectorx and writes the mapped table; no Python object per cell)."
            ),
        ),
        "loader_nice": ParamSpec(
            type="int",
            default=10,
            description="CPU niceness the loader process adds to its own (0: none).",
        ),
    },
    printer=FeedDataPrinter(),
    codec=FEED_CODEC,
)

register_resource(FEED_DATA_SCHEMA, FeedDataFetcher)
