"""Each public face lists exactly what it exports, and every listed name exists."""

from __future__ import annotations

import importlib

import pytest

FACES = [
    "pineapple",
    "pineapple.resource",
    "pineapple.engine",
    "pineapple.operators.bench",
    "resources",
    "server",
    "dsl",
    "codegen",
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


RESOURCE_FACE = """LATENCY_BUCKETS NOT_MODIFIED Condition Context DuplicateRegistrationError Fetcher
FetcherFactory HandleReleasedError JSONPrinter LoadedConfig Manager ManagerMetrics
ManagerStateError MissingResourceError ParamSpec Printer ProbeReport Probed Reachability RefValue
RefreshError RefreshResult Registry ResourceHandle ResourceProvider ResourceSchema ResourceStatus
ResourceUnavailableError StartError Static UnknownResourceError all_schemas borrow default_registry
flush_closes from_context
load_config probe_report_of redact redact_value register_resource resource_names
validate_resource_deps with_resources
MemoryBudget MemoryBudgetExceededError NoPreviousValueError PinnedError ValidationRefusedError
ValidationSpec Validator ValueRefusedError register_validator registered_validators
PickleCodec SnapshotCodec SnapshotFormatError SnapshotWriteError
ClientReport CommandCell CommandStats Metered client_report_of"""

ENGINE_FACE = """DAG_FORMATS OPERATOR_KINDS PIECE Engine EngineStats Graph Metadata Operator
OperatorFactory
OperatorInput OperatorKind OperatorOutput OperatorRegistry OperatorSchema Result StatsTotals
TraceEntry UnknownFormatError UnknownGroupError all_operator_schemas build_operator
default_operator_registry pieces register_operator stable_order stats_dict"""

HTTP_FACE = """BUDGETED_FROM_BYTES STATUS_BAD_REQUEST STATUS_BUSY STATUS_CONTRACT
STATUS_DEADLINE STATUS_EXECUTION STATUS_TOO_MANY_ITEMS
STATUS_UNKNOWN_GROUP ParseBudget encode_response go_json respond"""


@pytest.mark.parametrize(
    ("name", "face"),
    [
        ("pineapple.resource", RESOURCE_FACE),
        ("pineapple.engine", ENGINE_FACE),
        ("pineapple.engine.http", HTTP_FACE),
        ("pineapple.builtins", "load operator_registry resource_registry"),
    ],
)
def test_faces_list_the_documented_contract(name: str, face: str) -> None:
    # Internals (close_now, secrets_of, go_json on the engine face, ...) stay private.
    assert sorted(importlib.import_module(name).__all__) == sorted(face.split())
