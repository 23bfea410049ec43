"""``Flow`` and ``SubFlow``: an ordered declaration of operators, sub-flows and resources.

A flow records calls; it checks shapes as they are made and everything else
when it is compiled (:func:`dsl.compile_flow`). Operators come from the
generated ``OperatorMethods`` mixin (one typed method per registered
operator type) or from :meth:`add_operator` for a type by name.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Self, Unpack

from pineapple import ConfigError, ParamSpec
from pineapple.resource.lowlevel import ValidationSpec

from ._apple_call import split_apple_keywords
from ._branch import BranchCall, BranchScope, SkipField
from ._errors import ValidationError
from ._recorder import CallKeywords, OperatorCall, field_list, make_call
from ._resource import BaseResource
from .generated.operators import OperatorMethods

__all__ = ["STORAGE_MODES", "Flow", "ResourceDecl", "SubFlow", "SubFlowEntry", "set_compiler"]

STORAGE_MODES = ("row", "column")
"""The values of ``Flow(storage_mode=...)`` (the engine's frame layout)."""


@dataclass(frozen=True)
class ResourceDecl:
    """One ``flow.resource(name, res)`` declaration."""

    name: str
    resource_type: str
    interval: int | float
    params: Mapping[str, Any]
    schema: Mapping[str, ParamSpec] = field(default_factory=dict)
    """The declaring class's own params schema (used when the type is not registered)."""
    validate: Mapping[str, Any] | None = None
    """The entry's ``validate`` block (None: no validators)."""
    keep_previous: bool = False
    replay: bool = False
    """A refreshed value answers the server's recent requests before it is swapped in."""


@dataclass(frozen=True)
class SubFlowEntry:
    """A sub-flow placed in its parent, with the guards active at that point."""

    flow: SubFlow
    skip: tuple[SkipField, ...]


def _check_name(kind: str, name: object, *, path_part: bool = True) -> str:
    """``name`` if it is a non-empty string (and, as a ``path_part``, holds no separator)."""
    if not isinstance(name, str) or not name:
        raise ValidationError(f"{kind} name must be a non-empty string, got {name!r}")
    if not path_part:
        return name
    if "/" in name:
        raise ValidationError(f"{kind} name {name!r} must not contain '/' (the path separator)")
    if "::" in name:
        raise ValidationError(
            f"{kind} name {name!r} must not contain '::' (reserved: control fields use it)"
        )
    return name


def _contract(what: str, key: str, value: Sequence[str] | None) -> list[str] | None:
    return None if value is None else field_list(what, key, value)


class _Node(OperatorMethods):
    """What flows and sub-flows share: ordered children, branches and skip guards."""

    def __init__(self, name: str) -> None:
        # A sub-flow's name becomes part of a path: its separators are refused
        # where it is placed (add_subflow), as Apple does.
        self._name = _check_name(type(self).__name__, name, path_part=False)
        self._children: list[OperatorCall | SubFlowEntry | BranchCall] = []
        owner = "sub-flow" if isinstance(self, SubFlow) else "flow"
        self._scope = BranchScope(f"{owner} {self._name!r}")

    @property
    def name(self) -> str:
        """The flow's (or sub-flow's) name."""
        return self._name

    @property
    def children(self) -> list[OperatorCall | SubFlowEntry | BranchCall]:
        """Operator calls, sub-flows and branches (control operators) in order (a copy)."""
        return list(self._children)

    def open_blocks(self) -> list[str]:
        """A message for each ``if_`` block not closed yet (empty when balanced)."""
        return self._scope.unclosed()

    def _record(self, call: OperatorCall) -> Self:
        self._scope.settle()
        call.skip = list(self._scope.guards())
        self._children.append(call)
        self._scope.note_child()
        return self

    def add_operator(
        self,
        type_name: str,
        params: Mapping[str, Any] | None = None,
        **keywords: Unpack[CallKeywords],
    ) -> Self:
        """Add an operator of type ``type_name`` by name (untyped; checked at compile).

        The generated methods (``flow.filter_truncate(top_n=10)``) are the typed
        way; this one serves plugin types that codegen has not seen yet::

            flow.add_operator("my_scorer", {"weight": 0.5}, item_output=["score"])
        """
        if not isinstance(type_name, str) or not type_name:
            raise ValidationError("add_operator: type_name must be a non-empty string")
        return self._record(make_call(type_name, params or {}, **keywords))

    def _add_op(self, type_name: str, **kwargs: Any) -> Self:
        """Apple's untyped call: metadata keywords and params in one set of keywords.

        ``flow._add_op("transform_by_lua", common_input=["x"], lua_script=...)``
        is ``flow.add_operator("transform_by_lua", {"lua_script": ...},
        common_input=["x"])``. ``recall=`` is accepted and ignored, as in Apple.
        """
        if not isinstance(type_name, str) or not type_name:
            raise ValidationError("_add_op: type_name must be a non-empty string")
        params, keywords = split_apple_keywords(type_name, kwargs)
        return self._record(make_call(type_name, params, **keywords))

    def add_subflow(self, sub_flow: SubFlow) -> Self:
        """Place ``sub_flow`` here (a ``pipeline_map`` entry named by its path)."""
        if not isinstance(sub_flow, SubFlow):
            raise ValidationError(
                f"{self._name!r}: add_subflow takes a SubFlow, got {type(sub_flow).__name__}"
            )
        if sub_flow is self:
            raise ValidationError(f"sub-flow {self._name!r} cannot contain itself")
        _check_name("SubFlow", sub_flow.name)
        self._scope.settle()
        self._children.append(SubFlowEntry(sub_flow, self._scope.guards()))
        self._scope.note_child()
        return self

    @contextlib.contextmanager
    def skip_when(self, *fields: str) -> Iterator[Self]:
        """Operators and sub-flows added inside the block are skipped when a field is true.

        Each field is a common field whose name starts with ``_`` (an engine
        control field), written by an earlier operator; it becomes the
        operator's ``skip`` list and is added to its ``common_input`` so the
        engine orders the writer first::

            flow.transform_by_lua(..., common_output=["_not_vip"])
            with flow.skip_when("_not_vip"):
                flow.reorder_sort(order="desc", item_input=["vip_score"])
        """
        if not fields:
            raise ValidationError(f"{self._name!r}: skip_when needs at least one field")
        for f in fields:
            if not isinstance(f, str) or not f.startswith("_"):
                raise ValidationError(
                    f"{self._name!r}: skip field {f!r} must be a string starting with '_' "
                    "(control fields are engine-internal)"
                )
        token = self._scope.push_frame(tuple(fields))
        try:
            yield self
        except BaseException:
            self._scope.close_frame(token, failed=True)
            raise
        self._scope.close_frame(token, failed=False)

    def if_(self, condition: str) -> Self:
        """Start a branch block: what follows runs only when ``condition`` holds.

        ``condition`` is a Lua expression over common fields, bare or as
        ``{{field}}`` markers (``"score > 50"``, ``"{{tier}} == 'vip'"``). Each
        field must be in the flow's ``common_input`` or written by an earlier
        operator (checked at compile). Two spellings::

            with flow.if_("tier == 'vip'"):
                flow.reorder_sort(order="desc", item_input=["vip_score"])
            with flow.elif_("tier == 'new'"):
                flow.reorder_shuffle(salt="new_user")
            with flow.else_():
                flow.filter_truncate(top_n=20)

            flow.if_("{{tier}} == 'vip'").reorder_sort(order="desc").else_()
            flow.filter_truncate(top_n=20).end_if_()     # Apple's shape

        Compiles to one ``transform_by_lua`` control operator per branch
        (``for_branch_control: true``) writing a ``_``-field that guards the
        branch's operators through ``skip``.
        """
        self._children.append(self._scope.open_if(condition))
        return self

    def elif_(self, condition: str) -> Self:
        """Add a branch taken when no earlier branch was and ``condition`` holds."""
        self._children.append(self._scope.add_branch("elif", condition))
        return self

    def elseif_(self, condition: str) -> Self:
        """Apple's spelling of :meth:`elif_` (messages name it as written)."""
        self._children.append(self._scope.add_branch("elif", condition, "elseif"))
        return self

    def else_(self) -> Self:
        """Add the last branch, taken when no earlier branch of the block was."""
        self._children.append(self._scope.add_branch("else", None))
        return self

    def end_if_(self) -> Self:
        """Close the innermost block opened by :meth:`if_` (not needed after ``with``)."""
        self._scope.end_if()
        return self

    def __enter__(self) -> Self:
        """``with flow.if_(...)``/``elif_``/``else_``: the block is the branch's body."""
        self._scope.enter()
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        """End the branch; a following ``with flow.elif_``/``else_`` continues the block."""
        if exc_type is None:
            self._scope.exit()


class SubFlow(_Node):
    """A named group of operators; compiles to a ``pipeline_map`` entry.

    Sub-flows nest; a sub-flow's path is its ancestors' names and its own,
    joined by ``/``. A sub-flow object may be placed only once.

    Optional contract, checked at compile (Apple's keywords and order):
    ``common_input``/``item_input``: every field its operators (and those of
    nested sub-flows) read comes from the contract or an earlier operator
    inside it; ``common_output``/``item_output``: every operator inside it
    writes something read inside it or listed there (else it is dead by
    sub-flow scope); ``required_resources``: names the flow declares. A list
    left ``None`` is not checked::

        stage = SubFlow("score", item_input=["ctr"], item_output=["score"])
    """

    def __init__(
        self,
        name: str,
        common_input: Sequence[str] | None = None,
        common_output: Sequence[str] | None = None,
        item_input: Sequence[str] | None = None,
        item_output: Sequence[str] | None = None,
        required_resources: Sequence[str] | None = None,
    ) -> None:
        super().__init__(name)
        what = f"sub-flow {name!r}"
        self.common_input: list[str] | None = _contract(what, "common_input", common_input)
        self.common_output: list[str] | None = _contract(what, "common_output", common_output)
        self.item_input: list[str] | None = _contract(what, "item_input", item_input)
        self.item_output: list[str] | None = _contract(what, "item_output", item_output)
        self.required_resources: list[str] | None = _contract(
            what, "required_resources", required_resources
        )


class Flow(_Node):
    """A whole pipeline: its contract, operators, sub-flows and resources.

    ::

        flow = Flow("recommend", common_input=["user_id"], item_output=["item_id"])
        flow.resource("hot_items", JsonFileResource(path="data/hot.json"))
        flow.recall_resource(resource_name="hot_items", item_output=["item_id", "score"])
        text = flow.compile()

    The contract lists become ``flow_contract``; the top-level children become
    ``pipeline_group.main``. Apple's keywords are accepted in Apple's order:
    ``sub_flows`` (placed first, in order), ``storage_mode`` (``"row"`` or
    ``"column"``), ``log_prefix``, ``debug`` (written at the top level of the
    config) and ``skip_dead_code`` (turns the dead-operator check off).
    """

    def __init__(
        self,
        name: str,
        common_input: Sequence[str] | None = None,
        item_input: Sequence[str] | None = None,
        common_output: Sequence[str] | None = None,
        item_output: Sequence[str] | None = None,
        sub_flows: Sequence[SubFlow] | None = None,
        storage_mode: str | None = None,
        log_prefix: str | None = None,
        debug: bool = False,
        skip_dead_code: bool = False,
    ) -> None:
        super().__init__(name)
        what = f"flow {name!r}"
        self.common_input = field_list(what, "common_input", common_input)
        self.item_input = field_list(what, "item_input", item_input)
        self.common_output = field_list(what, "common_output", common_output)
        self.item_output = field_list(what, "item_output", item_output)
        self._resources: dict[str, ResourceDecl] = {}
        if storage_mode is not None and storage_mode not in STORAGE_MODES:
            raise ValidationError(
                f"{what}: invalid storage_mode={storage_mode!r}, must be one of "
                f"{sorted(STORAGE_MODES)}"
            )
        if log_prefix is not None and not isinstance(log_prefix, str):
            raise ValidationError(f"{what}: log_prefix must be a string, got {log_prefix!r}")
        #: ``"row"``/``"column"`` or ``None`` (the engine's default); written when set.
        self.storage_mode = storage_mode
        #: A prefix for the engine's log lines; written when non-empty.
        self.log_prefix = log_prefix
        #: Written as ``"debug": true`` (the engine logs every operator) when true.
        self.debug = bool(debug)
        #: Apple's escape hatch: do not report dead operators (flow and sub-flow scope).
        self.skip_dead_code = bool(skip_dead_code)
        for sub_flow in sub_flows or ():
            self.add_subflow(sub_flow)

    @property
    def resources(self) -> list[ResourceDecl]:
        """The declared resources, in declaration order."""
        return list(self._resources.values())

    def resource(
        self,
        name: str,
        res: BaseResource,
        *,
        validate: Mapping[str, Any] | None = None,
        keep_previous: bool = False,
        replay: bool = False,
    ) -> Self:
        """Declare resource ``name`` (operators refer to it by ``resource_name``).

        ``validate``: the entry's validators (``min_rows``, ``max_rows``,
        ``max_change_ratio``, ``required_columns``, ``unique_key``, ``hooks``),
        checked here; ``keep_previous``: keep the previous value for rollback;
        ``replay``: a refreshed value answers the server's sample of recent requests
        before it is swapped in (refused like a validator when it fails one).
        """
        _check_name("resource", name)
        if not isinstance(res, BaseResource):
            raise ValidationError(
                f"resource {name!r}: expected a BaseResource, got {type(res).__name__}"
            )
        if not isinstance(res.resource_type, str) or not res.resource_type:
            raise ValidationError(
                f"resource {name!r}: {type(res).__name__} has no resource type: set the "
                "class's _name, or res.resource_type = '<type>' before flow.resource()"
            )
        if name in self._resources:
            raise ValidationError(f"resource {name!r} is declared twice in flow {self._name!r}")
        if not isinstance(keep_previous, bool):
            raise ValidationError(f"resource {name!r}: keep_previous must be a bool")
        if not isinstance(replay, bool):
            raise ValidationError(f"resource {name!r}: replay must be a bool")
        try:
            spec = ValidationSpec.parse(name, validate)
        except ConfigError as exc:
            raise ValidationError(str(exc)) from None
        self._resources[name] = ResourceDecl(
            name=name,
            resource_type=res.resource_type,
            interval=res.interval,
            params=dict(res.params),
            schema=res.schema,
            validate=spec.to_dict() if not spec.empty else None,
            keep_previous=keep_previous,
            replay=replay,
        )
        return self

    def compile(self) -> str:
        """The unified JSON text of this flow (see :func:`dsl.compile_json`)."""
        return _compilers().text(self)

    def compile_dict(self) -> dict[str, Any]:
        """The unified config of this flow as a dict (Apple's name for :func:`dsl.compile_flow`)."""
        return _compilers().config(self)


@dataclass(frozen=True)
class _Compilers:
    config: Callable[[Flow], dict[str, Any]]
    text: Callable[[Flow], str]


_COMPILERS: list[_Compilers] = []
"""Set once by ``dsl._compile`` (which imports this module, so it cannot be imported here)."""


def set_compiler(config: Callable[[Flow], dict[str, Any]], text: Callable[[Flow], str]) -> None:
    """Install the compile functions ``Flow.compile_dict``/``compile`` call (``dsl._compile``)."""
    _COMPILERS[:] = [_Compilers(config, text)]


def _compilers() -> _Compilers:
    if not _COMPILERS:  # only if dsl._compile was never imported (``import dsl`` imports it)
        raise ValidationError("dsl._compile is not loaded: import dsl")
    return _COMPILERS[0]
