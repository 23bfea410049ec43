"""Each public face lists exactly what it exports, and every listed name exists."""

from __future__ import annotations

import importlib

import pytest

FACES = [
    "pineapple",
    "pineapple.resource",
    "pineapple.resource.lowlevel",
    "pineapple.engine",
    "pineapple.operators.bench",
    "resources",
    "resources.lowlevel",
    "server",
    "server.lowlevel",
    "server.fleet",
    "dsl",
    "codegen",
    "codegen.lowlevel",
    "pineapple.commands",
]


@pytest.mark.parametrize("name", FACES)
def test_all_lists_existing_public_names(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(exported) == len(set(exported)), "duplicates in __all__"
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), n)) or exported == sorted(
        exported
    )
    for attr in exported:
        assert hasattr(module, attr), f"{name}.__all__ lists missing {attr}"
    public = {
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and not isinstance(v, type(importlib))
    }
    assert public - set(exported) <= {"annotations"}, f"{name} exports unlisted names"


RESOURCE_FACE = """NOT_MODIFIED Manager ResourceHandle Fetcher FetcherFactory StartError
ManagerStateError DuplicateRegistrationError HandleReleasedError UnknownResourceError RefreshError
MissingResourceError ResourceProvider Static with_resources from_context borrow
ResourceUnavailableError ResourceStatus Registry ResourceSchema Printer register_resource
Validator register_validator ValueRefusedError ValidationRefusedError
MemoryBudgetExceededError PinnedError NoPreviousValueError"""

RESOURCE_LOWLEVEL = """RefValue close_now MemoryBudget LoadedConfig load_config resource_names
ManagerMetrics RefreshResult SnapshotCodec PickleCodec SnapshotFormatError SnapshotWriteError
LATENCY_BUCKETS Probed ProbeReport Reachability probe_report_of
Metered ClientReport CommandStats CommandCell client_report_of
JSONPrinter redact_value registered_validators NamedFetcherFactory
FetcherHooks FETCHER_HOOKS Closable CodecHooks call_hook hook_of
all_schemas default_registry validate_resource_deps flush_closes redact ValidationSpec Condition
SourceReport source_report_of admitted_upstream"""

TYPES_FACE = """FeedTable MappedFeedTable FeedQueryError FileMapping FileRows RedisConnection
FeedDataFetcher FileTableFetcher RedisConnectionFetcher SourceError"""

TYPES_LOWLEVEL = """STATIC_SCHEMA FEED_DATA_SCHEMA JSON_FILE_SCHEMA CSV_FILE_SCHEMA
REDIS_CONNECTION_SCHEMA FEED_CODEC FILE_CODEC write_feed_snapshot open_mapped_table
build_feed_table MySQLSource PostgresSource SQLiteSource parse_mysql_dsn MySQLDSN
parse_postgres_dsn PostgresDSN"""

ENGINE_FACE = """DAG_FORMATS OPERATOR_KINDS PIECE Engine EngineStats Graph Metadata Operator
OperatorFactory
OperatorInput OperatorKind OperatorOutput OperatorRegistry OperatorSchema Result StatsTotals
TraceEntry UnknownFormatError UnknownGroupError all_operator_schemas build_operator
default_operator_registry pieces register_operator stable_order stats_dict"""

SERVER_FACE = """ADMIN_TOKEN_ENV BuildError Config HandResource Wiring check create_app run"""

SERVER_LOWLEVEL = """ConfigInfo EngineExtras EngineLike ReloadOutcome Reloader Responder Service
Snapshot SnapshotHolder"""

CODEGEN_FACE = """CodegenError default_target render_all run stale_files write_files"""

CODEGEN_LOWLEVEL = """FLOW_NAMES METADATA_ARGS render_operators render_resources"""

COMMANDS_FACE = """COMMANDS_GROUP DefaultsOnceFormatter Subparsers add_subcommand"""
FLEET_FACE = """ANNOUNCEMENTS BUCKETS CONFIG CONFIG_KEY LEASES PINS PODS PRODUCER_LEASE Announcement
AnnouncementError DigestMismatchError FleetError FleetLimits FleetStore Lease ObjectInfo
ObjectMissingError Record RevisionConflictError SnapshotCache SnapshotTooLargeError
StoreUnavailableError Watch announced check_portable open_store publish_snapshot"""

HTTP_FACE = """BUDGETED_FROM_BYTES STATUS_ANSWER_TOO_LARGE STATUS_BAD_REQUEST STATUS_BUSY
STATUS_CONTRACT STATUS_DEADLINE STATUS_EXECUTION STATUS_TOO_MANY_ITEMS
STATUS_UNKNOWN_GROUP BorrowLog ParseBudget config_revision encode_response go_json respond
with_borrow_log with_config_revision"""


@pytest.mark.parametrize(
    ("name", "face"),
    [
        ("pineapple.resource", RESOURCE_FACE),
        ("pineapple.resource.lowlevel", RESOURCE_LOWLEVEL),
        ("resources", TYPES_FACE),
        ("resources.lowlevel", TYPES_LOWLEVEL),
        ("pineapple.engine", ENGINE_FACE),
        ("pineapple.engine.http", HTTP_FACE),
        ("server.fleet", FLEET_FACE),
        ("pineapple.builtins", "load operator_registry resource_registry"),
        ("server", SERVER_FACE),
        ("server.lowlevel", SERVER_LOWLEVEL),
        ("codegen", CODEGEN_FACE),
        ("codegen.lowlevel", CODEGEN_LOWLEVEL),
        ("pineapple.commands", COMMANDS_FACE),
        ("pineapple.cli", "build_parser main"),
    ],
)
def test_faces_list_the_documented_contract(name: str, face: str) -> None:
    # Internals (close_now, secrets_of, go_json on the engine face, ...) stay private.
    assert sorted(importlib.import_module(name).__all__) == sorted(face.split())


@pytest.mark.parametrize("name", ["pineapple.resource", "resources", "server", "codegen"])
def test_lowlevel_names_are_not_on_the_face(name: str) -> None:
    # Each name has one home: the user's word on the face, the plumbing in lowlevel.
    face = set(importlib.import_module(name).__all__)
    lowlevel = set(importlib.import_module(f"{name}.lowlevel").__all__)
    assert face & lowlevel == set()


def test_the_resource_face_holds_at_most_thirty_words() -> None:
    # The style guide's size for a face: the words a user types, the rest in lowlevel.
    assert len(importlib.import_module("pineapple.resource").__all__) <= 30
