"""The migration corpus: flows written for Apple compile here to what Apple writes.

Each ``apple_flows/flow_*.py`` is an Apple flow file, unchanged (``from apple
import Flow, SubFlow, BaseResource``); here ``apple`` names our ``dsl``. Its
``.expected.json`` is what the Apple DSL itself wrote for it (see
``apple_flows/_generate.py`` and ``APPLE_VERSION.json``). After the
normalization below (documented in ``dsl/README.md``, "Coming from Apple"),
both configs are equal, and both give the same ``/execute`` response on our
engine.
"""

from __future__ import annotations

import json
import re
import runpy
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import dsl
import pineapple
import resources  # noqa: F401  (registers the resource types the flows use)
from pineapple import resource
from pineapple.engine import Engine, default_operator_registry
from pineapple.engine.http import respond

CORPUS = Path(__file__).parent / "apple_flows"
FLOWS = sorted(CORPUS.glob("flow_*.py"))

_ENGINE_DERIVED: tuple[str, ...] = ("$code_info", "recall", "consumes_row_set", "mutates_row_set")
_ENGINE_DERIVED += ("additive_writes_row_set",)
_ENGINE_KEYS = frozenset(
    {"type_name", "$metadata", "sources", "skip", "common_defaults", "item_defaults"}
    | {"strict_common", "strict_item", "for_branch_control", "debug", "data_parallel"}
)


def _auto_names(operators: dict[str, Any]) -> dict[str, str]:
    """``type_HASH6[_n]`` names -> ``type#k`` (k: its rank among auto-named ops of the type)."""
    renames: dict[str, str] = {}
    counts: dict[str, int] = {}
    for name, entry in operators.items():
        type_name = entry["type_name"]
        if re.fullmatch(re.escape(type_name) + r"_[0-9A-Fa-f]{6}(_\d+)?", name):
            counts[type_name] = counts.get(type_name, 0) + 1
            renames[name] = f"{type_name}#{counts[type_name]}"
    return renames


def _without_defaults(entry: dict[str, Any]) -> dict[str, Any]:
    schema = default_operator_registry().get(entry["type_name"])
    specs = schema.params if schema is not None else {}
    return {
        key: value
        for key, value in entry.items()
        if key in _ENGINE_KEYS
        or key not in specs
        or specs[key].required
        or value != specs[key].default
    }


def normalize(config: dict[str, Any]) -> dict[str, Any]:
    """The parts of a config that must agree between Apple's output and ours.

    Dropped: version and create time; ``$code_info`` (source locations);
    ``recall`` and the row-set markers (our engine takes them from the
    operator type); params equal to the schema default (ours writes them,
    Apple writes what was passed). Auto-names (``type_HASH6``) become
    ``type#k`` in flow order, wherever they appear.
    """
    out = {k: v for k, v in config.items() if not k.startswith("_PINEAPPLE_")}
    operators = out["pipeline_config"]["operators"]
    renames = _auto_names(operators)

    def rename(names: list[str]) -> list[str]:
        return [renames.get(n, n) for n in names]

    new_ops = {}
    for name, entry in operators.items():
        entry = {k: v for k, v in entry.items() if k not in _ENGINE_DERIVED}
        if "sources" in entry:
            entry["sources"] = rename(entry["sources"])
        new_ops[renames.get(name, name)] = _without_defaults(entry)
    pipeline_map = {
        path: {"pipeline": rename(sub["pipeline"])}
        for path, sub in out["pipeline_config"]["pipeline_map"].items()
    }
    out["pipeline_config"] = {"operators": new_ops, "pipeline_map": pipeline_map}
    out["pipeline_group"] = {
        key: {"pipeline": rename(group["pipeline"])} for key, group in out["pipeline_group"].items()
    }
    return out


@pytest.fixture
def apple_alias(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``import apple`` gives our DSL while a corpus flow runs."""
    shim = types.ModuleType("apple")
    shim.Flow = dsl.Flow  # type: ignore[attr-defined]
    shim.SubFlow = dsl.SubFlow  # type: ignore[attr-defined]
    shim.BaseResource = dsl.BaseResource  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "apple", shim)
    yield


def _load(path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    namespace = runpy.run_path(str(path))
    ours = dsl.compile_flow(namespace["flow"])
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    return ours, expected, namespace["REQUEST"]


def test_the_corpus_is_big_enough_and_records_apples_version() -> None:
    assert len(FLOWS) >= 20
    # The DSL README (the docs' DSL reference) counts the corpus once, as it is.
    readme = (Path(__file__).resolve().parents[2] / "dsl" / "README.md").read_text()
    counts = re.findall(r"(\d+) (?:Apple )?flow(?:s| files)\b", readme)
    assert counts == [str(len(FLOWS))], counts
    assert all(p.with_suffix(".expected.json").is_file() for p in FLOWS)
    record = json.loads((CORPUS / "APPLE_VERSION.json").read_text())
    assert re.fullmatch(r"[0-9a-f]{40}", record["commit"]) and record["apple_version"]


@pytest.mark.usefixtures("apple_alias")
@pytest.mark.parametrize("path", FLOWS, ids=lambda p: p.stem)
def test_corpus_flow_compiles_to_what_apple_writes(path: Path) -> None:
    ours, expected, _ = _load(path)
    assert normalize(ours) == normalize(expected)


def _execute(config: dict[str, Any], request: dict[str, Any]) -> Any:
    manager = resource.Manager()
    manager.load_from_root_config(config)
    manager.start()
    engine = Engine(config)
    try:
        ctx = resource.with_resources(pineapple.Context().with_timeout(10), manager)
        return engine.execute(ctx, json.loads(json.dumps(request)))
    finally:
        engine.close()
        manager.stop()


@pytest.mark.usefixtures("apple_alias")
@pytest.mark.parametrize("path", FLOWS, ids=lambda p: p.stem)
def test_corpus_flow_answers_like_apples_config(path: Path) -> None:
    ours, expected, request = _load(path)
    answer = _execute(ours, request)
    assert answer == _execute(expected, request)
    assert answer["items"] or answer["common"]  # the flow did something


def _markers(config: dict[str, Any]) -> dict[str, tuple[bool, bool, bool]]:
    """Each operator's effective row-set markers (its type's, OR'd with the config's)."""
    engine = Engine(config)
    try:
        renames = _auto_names(config["pipeline_config"]["operators"])
        return {
            renames.get(step.name, step.name): (
                step.traits.consumes_row_set,
                step.traits.mutates_row_set,
                step.traits.additive_writes_row_set,
            )
            for step in engine._steps
        }
    finally:
        engine.close()


@pytest.mark.usefixtures("apple_alias")
@pytest.mark.parametrize("path", FLOWS, ids=lambda p: p.stem)
def test_corpus_flow_has_apples_row_set_markers(path: Path) -> None:
    """Apple writes every marker; ours writes the ones a call widened: the engine sees the same."""
    ours, expected, _ = _load(path)
    assert _markers(ours) == _markers(expected)


_APPLE_OWN_FRAME = re.compile(r".*/apple/flow\.py:\d+ in op_caller\(\): ")


def _code_infos(config: dict[str, Any]) -> dict[str, str]:
    operators = config["pipeline_config"]["operators"]
    renames = _auto_names(operators)
    return {renames.get(name, name): entry["$code_info"] for name, entry in operators.items()}


@pytest.mark.usefixtures("apple_alias")
@pytest.mark.parametrize("path", FLOWS, ids=lambda p: p.stem)
def test_corpus_flow_records_where_each_operator_was_declared(path: Path) -> None:
    """``$code_info``: Apple's text, and the user's line where Apple names its own frame.

    Apple records the flow file by the path it was run from (ours: relative to
    the working directory); for a typed call (``flow.filter_truncate(...)``)
    Apple records a line of its own ``flow.py``, ours the line of the flow file.
    """
    ours, expected, _ = _load(path)
    got, want = _code_infos(ours), _code_infos(expected)
    assert list(got) == list(want)
    source = path.read_text().splitlines()
    for name, info in got.items():
        if info.startswith("["):  # a control operator: "[if] {{tier}} == 'vip'"
            assert info == want[name]
            continue
        where, _, call = info.partition(" in ")
        file, _, line = where.rpartition(":")
        assert Path(file).resolve() == path.resolve()
        type_name = call.rsplit(": .", 1)[1].removesuffix("(...)")
        assert any(f"{c}(" in source[int(line) - 1] for c in (type_name, "_add_op"))
        if _APPLE_OWN_FRAME.match(want[name]):
            assert want[name].endswith(call.split(": ", 1)[1])  # same operator type
        else:
            apple_where, _, apple_call = want[name].partition(" in ")
            assert apple_where.rpartition(":")[2] == line and apple_call == call


DIVERGENT = Path(__file__).parent / "apple_divergent"


@pytest.mark.usefixtures("apple_alias")
def test_a_bare_name_condition_reads_its_field_where_apples_json_fails() -> None:
    """``if_("x > 0")`` with ``x`` declared: ours keeps x in the control operator's input.

    Apple gives that operator ``common_input: []``; the Go engine then sets no
    global ``x`` and the condition compares a number with nil. Our engine
    answers Apple's JSON as Go does (the same error, in Go's words); what
    ours compiles lists ``x`` and runs the branch. That is the one place our
    output deliberately differs from Apple's (dsl/README.md, "Coming from Apple").
    """
    ours, expected, request = _load(DIVERGENT / "flow_bare_name_condition.py")
    ours_ops = normalize(ours)["pipeline_config"]["operators"]
    apple_ops = normalize(json.loads(json.dumps(expected)))["pipeline_config"]["operators"]
    assert ours_ops["if_1"]["$metadata"]["common_input"] == ["x"]
    assert apple_ops["if_1"]["$metadata"]["common_input"] == []
    apple_ops["if_1"]["$metadata"]["common_input"] = ["x"]
    assert ours_ops == apple_ops  # nothing else differs

    assert _execute(ours, request)["items"] == [{"item_id": "a"}]
    engine = Engine(expected)
    try:
        status, body = respond(engine, pineapple.Context(), json.dumps(request).encode())
    finally:
        engine.close()
    assert status == 500, body
    assert json.loads(body)["error"] == (
        'pine: execution error in operator "if_1": lua: [string "transform_by_lua"]:1: '
        "attempt to compare number with nil\n"
        'stack traceback:\n\t[string "transform_by_lua"]:1: in main chunk'
    )
