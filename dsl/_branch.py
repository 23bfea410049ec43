"""If/elif/else blocks and ``skip_when`` frames: what guards each declaration.

A block compiles to one control operator per branch (a ``transform_by_lua``
common function, see ``_condition``) that writes the branch's control field:
``false`` when the branch is taken. Every operator declared in the branch,
and every operator of a sub-flow placed there, gets the field in its
``skip`` list, as do the control operators of nested blocks.

Two spellings share one state machine (:class:`BranchScope`):

- Apple's calls: ``flow.if_(c)`` ... ``flow.elseif_(c)`` / ``flow.elif_(c)``
  ... ``flow.else_()`` ... ``flow.end_if_()``; each returns the flow, so they
  chain.
- ``with`` blocks: ``with flow.if_(c): ...`` then ``with flow.elif_(c): ...``
  and ``with flow.else_(): ...``. Leaving a ``with`` block leaves its
  block open for an ``elif_``/``else_`` ("dangling"); the next other
  declaration closes it.

A block is either all ``with`` or all calls; mixing them is an error, as
are an ``elif_``/``else_``/``end_if_`` without an ``if_``, an ``elif_`` or
second ``else_`` after ``else_``, and a branch with no operators.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._condition import BranchKind, check_condition, condition_fields
from ._errors import ValidationError

__all__ = ["BranchCall", "BranchField", "BranchScope", "SkipField", "resolve_skip"]

_OPERATOR_PREFIX = {"if": "if", "elif": "elseif", "else": "else"}
"""A branch's control operator is named ``<prefix>_<n>`` (Apple's ``elseif_2``)."""


@dataclass(frozen=True)
class BranchField:
    """The control field of one branch, named once its sub-flow's path is known.

    Branch ``if_1`` of the flow itself is operator ``if_1`` writing ``_if_1``;
    in sub-flow ``a/b`` it is operator ``a::b::if_1`` writing ``_a::b::if_1``,
    so two sub-flows never share a control field. The names are Apple's, quirk
    included: an ``elif_`` branch is operator ``elseif_2`` writing ``_elif_2``
    in the flow itself, and ``a::elseif_2`` writing ``_a::elseif_2`` in a
    sub-flow (``top`` is the field's name in the flow itself).
    """

    local: str
    top: str = ""

    def operator_name(self, path: str) -> str:
        """The control operator's name in the sub-flow at ``path`` (``""``: the flow)."""
        prefix = path.replace("/", "::") + "::" if path else ""
        return prefix + self.local

    def resolve(self, path: str) -> str:
        """The control field's name in the sub-flow at ``path``."""
        if not path and self.top:
            return self.top
        return "_" + self.operator_name(path)


SkipField = str | BranchField
"""A guard of a declaration: a ``skip_when`` field, or a branch's control field."""


def resolve_skip(fields: tuple[SkipField, ...] | list[SkipField], path: str) -> tuple[str, ...]:
    """The guard fields' names in the sub-flow at ``path`` (first occurrence kept)."""
    names = (f.resolve(path) if isinstance(f, BranchField) else f for f in fields)
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class BranchCall:
    """One recorded ``if_``/``elif_``/``else_``: the control operator it compiles to.

    ``condition`` is as written (``None`` for ``else_``), ``expression`` its Lua,
    ``fields`` the common fields it reads, ``prior`` the control fields of the
    block's earlier branches, ``skip`` the guards of the enclosing blocks.
    """

    kind: BranchKind
    condition: str | None
    expression: str | None
    fields: tuple[str, ...]
    field: BranchField
    prior: tuple[BranchField, ...]
    skip: tuple[SkipField, ...]
    spelling: str = ""
    """The method the user called (``elseif`` for Apple's ``elseif_``); default: ``kind``."""

    def describe(self) -> str:
        """How the user wrote it: ``if_('score > 50')``, ``elseif_('x')``, ``else_()``."""
        method = self.spelling or self.kind
        return f"{method}_({self.condition!r})" if self.condition is not None else "else_()"

    def code_info(self) -> str:
        """The control operator's ``$code_info``, as Apple writes it: ``[if] score > 50``."""
        return f"[{_OPERATOR_PREFIX[self.kind]}] {self.condition or ''}"


@dataclass(eq=False)
class _Block:
    branches: list[BranchCall]
    managed: bool = False  # opened by ``with flow.if_(...)``
    dangling: bool = False  # a ``with`` branch ended; an elif_/else_ may follow
    has_body: bool = False  # the current branch has a declaration

    @property
    def opening(self) -> BranchCall:
        return self.branches[0]


@dataclass(eq=False)
class _Frame:
    fields: tuple[str, ...] = field(default_factory=tuple)


class BranchScope:
    """The open blocks and ``skip_when`` frames of one flow or sub-flow, innermost last.

    Guarantees: every declaration calls :meth:`settle` first, so guards never
    include a block whose ``with`` has ended; a block's branches share the
    guards of the frames below it; field names are local until compile.
    """

    def __init__(self, owner: str) -> None:
        self._owner = owner
        self._stack: list[_Block | _Frame] = []
        self._count = 0
        self._entering: _Block | None = None

    def _fail(self, message: str) -> ValidationError:
        return ValidationError(f"{self._owner}: {message}")

    def _guards(self, depth: int) -> tuple[SkipField, ...]:
        guards: list[SkipField] = []
        for entry in self._stack[:depth]:
            if isinstance(entry, _Frame):
                guards.extend(entry.fields)
            else:
                guards.append(entry.branches[-1].field)
        return tuple(dict.fromkeys(guards))

    def _check_pending(self) -> None:
        block, self._entering = self._entering, None
        if block is not None and block.managed:
            branch = block.branches[-1]
            raise self._fail(
                f"{branch.describe()} continues `with flow.{block.opening.describe()}`, so it "
                f"must be written `with flow.{branch.describe()}:` (to continue an outer "
                "block instead, close this one first with end_if_())"
            )

    def _pop_dangling(self) -> None:
        while self._stack and isinstance(top := self._stack[-1], _Block) and top.dangling:
            self._stack.pop()

    def settle(self) -> None:
        """Before any declaration: close the ``with`` blocks that ended without elif_/else_."""
        self._check_pending()
        self._pop_dangling()

    def guards(self) -> tuple[SkipField, ...]:
        """The guards of a declaration made now (call :meth:`settle` first)."""
        return self._guards(len(self._stack))

    def note_child(self) -> None:
        """A declaration was made: the current branch of every open block has a body."""
        for entry in self._stack:
            if isinstance(entry, _Block):
                entry.has_body = True

    def _branch(
        self,
        kind: BranchKind,
        condition: object,
        prior: tuple[BranchField, ...],
        skip: tuple[SkipField, ...],
        spelling: str = "",
    ) -> BranchCall:
        expression = text = None
        fields: tuple[str, ...] = ()
        if kind != "else":
            expression = check_condition(f"{self._owner}: {spelling or kind}_()", condition)
            text = str(condition)
            fields = tuple(condition_fields(text))
        self._count += 1
        return BranchCall(
            kind=kind,
            condition=text,
            expression=expression,
            fields=fields,
            field=BranchField(f"{_OPERATOR_PREFIX[kind]}_{self._count}", f"_{kind}_{self._count}"),
            prior=prior,
            skip=skip,
            spelling=spelling,
        )

    def _check_body(self, block: _Block) -> None:
        if block.has_body:
            return
        branch = block.branches[-1]
        where = "" if branch is block.opening else f" of {block.opening.describe()}"
        raise self._fail(f"the {branch.describe()} branch{where} has no operators")

    def _top_block(self, what: str) -> _Block:
        top = self._stack[-1] if self._stack else None
        if not isinstance(top, _Block):
            if any(isinstance(entry, _Block) for entry in self._stack):
                raise self._fail(
                    f"{what} inside a skip_when() block cannot continue an if_() opened outside it"
                )
            raise self._fail(f"{what} without a matching if_()")
        if top.managed and not top.dangling:
            raise self._fail(
                f"{what} inside the `with flow.{top.opening.describe()}` block: write it "
                "after the block (the with statement ends the branch)"
            )
        return top

    def open_if(self, condition: object) -> BranchCall:
        """Start a block with its ``if_`` branch; returns the branch's control call."""
        self.settle()
        call = self._branch("if", condition, (), self.guards())
        self.note_child()
        block = _Block([call])
        self._stack.append(block)
        self._entering = block
        return call

    def add_branch(self, kind: BranchKind, condition: object, spelling: str = "") -> BranchCall:
        """Add an ``elif_`` (with ``condition``) or ``else_`` branch to the innermost block.

        ``spelling``: the method called (``"elseif"`` for Apple's ``elseif_``), for messages.
        """
        what = f"{spelling or kind}_()"
        self._check_pending()
        block = self._top_block(what)
        if any(b.kind == "else" for b in block.branches):
            raise self._fail(f"{what} after the else_() of {block.opening.describe()}")
        if not block.dangling:
            self._check_body(block)
        depth = len(self._stack) - 1
        prior = tuple(b.field for b in block.branches)
        call = self._branch(kind, condition, prior, self._guards(depth), spelling)
        block.branches.append(call)
        block.has_body = False
        self._entering = block
        return call

    def end_if(self) -> None:
        """Close the innermost block (a ``with`` block that has ended may be closed too)."""
        self._check_pending()
        block = self._top_block("end_if_()")
        if not block.dangling:
            self._check_body(block)
        self._stack.pop()

    def enter(self) -> None:
        """``with`` on the branch just added."""
        block, self._entering = self._entering, None
        if block is None:
            raise self._fail(
                "a flow is not a context manager by itself: write `with flow.if_(...)`, "
                "`with flow.elif_(...)` or `with flow.else_()`"
            )
        branch = block.branches[-1]
        if branch is block.opening:
            block.managed = True
        elif not block.managed:
            raise self._fail(
                f"`with flow.{branch.describe()}` continues {block.opening.describe()}, which "
                f"was opened without `with`: call flow.{branch.describe()} and end the block "
                "with end_if_()"
            )
        block.dangling = False

    def exit(self) -> None:
        """The ``with`` body of the innermost ``with`` branch ended (without an exception)."""
        self._check_pending()
        self._pop_dangling()
        top = self._stack[-1] if self._stack else None
        if not isinstance(top, _Block) or not top.managed:
            opened = f"{top.opening.describe()} " if isinstance(top, _Block) else ""
            raise self._fail(
                f"{opened}opened inside a `with` block is not closed: add end_if_()"
                if opened
                else "unbalanced `with` block"
            )
        self._check_body(top)
        top.dangling = True

    def push_frame(self, fields: tuple[str, ...]) -> object:
        """Open a ``skip_when`` frame; returns its token for :meth:`close_frame`."""
        self.settle()
        frame = _Frame(fields)
        self._stack.append(frame)
        return frame

    def close_frame(self, token: object, *, failed: bool) -> None:
        """Close a ``skip_when`` frame; an if_() left open inside it is an error."""
        if not failed:
            self._check_pending()
            self._pop_dangling()
            top = self._stack[-1] if self._stack else None
            if isinstance(top, _Block):
                raise self._fail(
                    f"{top.opening.describe()} opened inside skip_when() is not closed: "
                    "add end_if_()"
                )
        while self._stack:
            if self._stack.pop() is token:
                break

    def unclosed(self) -> list[str]:
        """A message for each block still open (``with`` blocks that ended are closed)."""
        problems = []
        if self._entering is not None and self._entering.managed:
            branch = self._entering.branches[-1]
            problems.append(f"{self._owner}: {branch.describe()} must be written `with ...:`")
        for entry in self._stack:
            if isinstance(entry, _Block) and not entry.dangling:
                problems.append(
                    f"{self._owner}: {entry.opening.describe()} is not closed: add end_if_() "
                    "(or write `with flow.if_(...):`)"
                )
        return problems
