"""``pineapple.engine.http``: the HTTP ``/execute`` semantics of the Go server, byte for byte.

A public submodule (not re-exported by :mod:`pineapple.engine`): the server
answers ``/execute`` with :func:`respond`; ``pineapple run`` prints
:func:`go_json` bytes; a custom ``Config.responder`` may wrap :func:`respond`.

The server hands over the raw request body and sends back exactly the
status and bytes returned here (``Content-Type: application/json``). The
response body is what Go's ``json.Encoder`` writes for the server's
``executeResponse``: keys ``common``, ``items``, then ``warnings`` and
``trace`` (when the request's ``common`` holds ``"_return_trace": true``)
and ``error`` only when present; map keys sorted; integral numbers without
``.0``; ``<``, ``>``, ``&`` escaped; a trailing newline.

Status codes: 200 success; 400 malformed body (``{"error": "invalid
request: ..."}``); 404 the request names a pipeline group the config does
not have (``{"error": "unknown pipeline group ..."}``); 400 flow-contract
violation too (``ValidationError``: a request missing a required field, as
the Go server answers it); 500 execution error, with the partial result beside the error text (as
Go). Bounds the Go server does not have: 413 when the request holds more
than ``max_items`` items (``{"error": "request has N items, more than the
limit of M"}``; "at least N" when the parse stopped early), 504 when the
context's deadline passed before the pipeline finished (``{"error":
"deadline exceeded in operator \"x\""}``, no partial result), 503 when a
``budget`` refuses the parse of a large body, and 507 when the answer would
pass ``max_answer_bytes`` (``{"error": "answer too large: ..."}``, no partial
result): refused while the run grows it (the operator's copies counted before
they are made, see ``_answer``), or measured once encoded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import orjson

from .. import resource
from .._context import Context
from .._errors import AnswerTooLargeError, DeadlineExceededError, ValidationError
from ._bigjson import PIECE_BYTES, TooManyItems, loads
from ._engine import Engine, UnknownGroupError
from ._gofmt import go_json as go_json
from ._pieces import PIECE, pieces, release
from ._provenance import BorrowLog as BorrowLog
from ._provenance import config_revision as config_revision
from ._provenance import served_by
from ._provenance import with_borrow_log as with_borrow_log
from ._provenance import with_config_revision as with_config_revision
from ._trace import TraceEntry, trace_json

__all__ = [
    "BUDGETED_FROM_BYTES",
    "STATUS_ANSWER_TOO_LARGE",
    "STATUS_BAD_REQUEST",
    "STATUS_BUSY",
    "STATUS_CONTRACT",
    "STATUS_DEADLINE",
    "STATUS_EXECUTION",
    "STATUS_TOO_MANY_ITEMS",
    "STATUS_UNKNOWN_GROUP",
    "BorrowLog",
    "ParseBudget",
    "config_revision",
    "encode_response",
    "go_json",
    "respond",
    "with_borrow_log",
    "with_config_revision",
]

STATUS_BAD_REQUEST = 400
STATUS_CONTRACT = 400
STATUS_EXECUTION = 500
STATUS_UNKNOWN_GROUP = 404
STATUS_TOO_MANY_ITEMS = 413
STATUS_DEADLINE = 504
STATUS_BUSY = 503
STATUS_ANSWER_TOO_LARGE = 507
"""The answer would pass ``max_answer_bytes``: the server will not hold it (as WebDAV's
Insufficient Storage), whatever the client retries; distinct from an operator's 500."""

BUDGETED_FROM_BYTES = 64 * 1024
"""Bodies above this size have their parse counted against ``respond``'s ``budget``."""


class ParseBudget(Protocol):
    """Bytes of parsed request objects that every ``respond`` call at once may hold.

    ``respond`` reserves :func:`~pineapple.engine._bigjson.parsed_bytes_bound` of
    what it is about to parse, and gives all of it back when it returns.
    """

    def reserve(self, nbytes: int) -> bool:
        """Take ``nbytes`` more (False: refused, nothing taken); a negative one gives back."""
        ...


class _Refused(Exception):
    pass


_GO_KIND = {dict: "object", list: "array", str: "string", bool: "bool", type(None): "null"}


def _go_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return _GO_KIND.get(type(value), "value")


def encode_response(
    common: Mapping[str, Any] | None,
    items: list[Any] | None,
    warnings: list[str] | None = None,
    error: str | None = None,
    trace: list[TraceEntry] | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> bytes:
    """The Go server's JSON body for an execute response (with the trailing newline).

    ``provenance``: a traced answer's ``served_by`` (``_provenance``), after ``trace``.
    """
    if not (warnings or trace or error or provenance) and (items is None or len(items) <= PIECE):
        # The usual answer in one pass: sorted keys put "common" before "items", and
        # go_json of the pair is its parts' go_json joined (it rewrites value by value).
        return go_json({"common": common, "items": items}) + b"\n"
    parts = [b'{"common":', go_json(common), b',"items":', _items_json(items)]
    if warnings:
        parts += [b',"warnings":', go_json(warnings)]
    if trace:
        parts += [b',"trace":', go_json(trace_json(trace))]
    if provenance is not None:
        parts += [b',"served_by":', go_json(provenance)]
    if error:
        parts += [b',"error":', go_json(error)]
    parts.append(b"}\n")
    return b"".join(parts)


def _items_json(items: list[Any] | None) -> bytes:
    """``go_json(items)``; a long list encoded in pieces (one call would hold the GIL)."""
    if items is None or len(items) <= PIECE:
        return go_json(items)
    # Each piece is "[...]" of at least one item: joined inside one pair of brackets.
    return b"[" + b",".join(go_json(part)[1:-1] for part in pieces(items)) + b"]"


def _bad_request(message: str) -> tuple[int, bytes]:
    return STATUS_BAD_REQUEST, go_json({"error": f"invalid request: {message}"}) + b"\n"


def _parse(
    body: bytes, max_items: int | None, reserve: Callable[[int], None] | None = None
) -> dict[str, Any] | str:
    """The request, or the text of why it is malformed; ``TooManyItems`` past the limit.

    A large body's items are counted while it is parsed in pieces (the parse stops
    past ``max_items``); ``reserve`` is asked before each part is parsed.
    """
    try:
        if reserve is None and len(body) <= PIECE_BYTES:
            data = orjson.loads(body)
        else:
            data = loads(body, max_items, reserve)
    except orjson.JSONDecodeError as exc:
        if not body.strip():
            return "EOF"
        # orjson's own words ("invalid literal, expected 'null'") read like a
        # parser internal: say plainly what is wrong and where.
        return (
            f"the body is not valid JSON (at line {exc.lineno}, column {exc.colno}, "
            f"byte {exc.pos}): {exc.msg}"
        )
    if not isinstance(data, dict):
        return (
            f"json: cannot unmarshal {_go_kind(data)} into Go value of type server.executeRequest"
        )
    common = data.get("common")
    if common is not None and not isinstance(common, dict):
        return (
            f"json: cannot unmarshal {_go_kind(common)} into Go struct field "
            "executeRequest.common of type map[string]interface {}"
        )
    items = data.get("items")
    if items is not None:
        if not isinstance(items, list):
            return (
                f"json: cannot unmarshal {_go_kind(items)} into Go struct field "
                "executeRequest.items of type []map[string]interface {}"
            )
        if max_items is not None and len(items) > max_items:
            raise TooManyItems(len(items), max_items)
        for item in items:  # bounded: at most max_items
            if item is not None and not isinstance(item, dict):
                return (
                    f"json: cannot unmarshal {_go_kind(item)} into Go struct field "
                    "executeRequest.items of type map[string]interface {}"
                )
    return {"common": common, "items": [i if i is not None else {} for i in items or ()]}


def respond(
    engine: Engine,
    ctx: Context | None,
    body: bytes,
    group: str | None = None,
    *,
    max_items: int | None = None,
    budget: ParseBudget | None = None,
    max_answer_bytes: int | None = None,
) -> tuple[int, bytes]:
    """Execute the JSON request ``body`` on ``group``; return ``(status, response bytes)``.

    ``max_items`` (None: no limit) refuses larger requests with 413 before
    anything runs (a large body's parse stops past it); ``ctx.deadline`` bounds
    the execution (504 past it). ``budget``: a body above
    :data:`BUDGETED_FROM_BYTES` reserves a bound of its parsed objects before they
    are built, held until this call returns; refused: 503 at once.
    ``max_answer_bytes`` (None: no limit) bounds the answer: 507 past it.
    """
    if budget is None or len(body) <= BUDGETED_FROM_BYTES:
        return _respond(engine, ctx, body, group, max_items, max_answer_bytes, None)
    held = 0

    def reserve(nbytes: int) -> None:
        nonlocal held
        if not budget.reserve(nbytes):
            raise _Refused
        held += nbytes

    try:
        return _respond(engine, ctx, body, group, max_items, max_answer_bytes, reserve)
    except _Refused:
        return STATUS_BUSY, go_json({"error": _BUSY}) + b"\n"
    finally:
        if held:
            budget.reserve(-held)


_BUSY = "server busy: the requests being parsed would pass the in-flight bytes limit"


def _respond(
    engine: Engine,
    ctx: Context | None,
    body: bytes,
    group: str | None,
    max_items: int | None,
    max_answer_bytes: int | None,
    reserve: Callable[[int], None] | None,
) -> tuple[int, bytes]:
    try:
        request = _parse(body, max_items, reserve)
    except TooManyItems as exc:
        return STATUS_TOO_MANY_ITEMS, go_json({"error": str(exc)}) + b"\n"
    if isinstance(request, str):
        return _bad_request(request)
    answer = _execute(engine, ctx, request, group, max_answer_bytes)
    items = request["items"]
    if len(items) > PIECE:
        release(items)  # the parsed items are this call's: freed in pieces
    return answer


def _execute(
    engine: Engine,
    ctx: Context | None,
    request: dict[str, Any],
    group: str | None,
    max_answer_bytes: int | None,
) -> tuple[int, bytes]:
    common = request["common"]
    # The only per-request cost of traces when not asked for: this one lookup.
    traced = common is not None and common.get("_return_trace") is True
    log: BorrowLog | None = None
    try:
        if traced:
            ctx, log = with_borrow_log(ctx)  # what the trace says was read (_provenance)
            result = engine.run(ctx, request, group, trace=True, max_answer_bytes=max_answer_bytes)
        elif max_answer_bytes is not None:
            result = engine.run(ctx, request, group, max_answer_bytes=max_answer_bytes)
        else:
            result = engine.run(ctx, request, group)
    except UnknownGroupError as unknown:  # one name per clause: mypyc types each
        return STATUS_UNKNOWN_GROUP, go_json({"error": str(unknown)}) + b"\n"
    except ValidationError as invalid:
        return STATUS_CONTRACT, encode_response(None, None, error=str(invalid))
    error = result.error
    if isinstance(error, DeadlineExceededError):
        answer = STATUS_DEADLINE, go_json({"error": _masker(ctx)(str(error))}) + b"\n"
    elif isinstance(error, AnswerTooLargeError):
        answer = _too_large(str(error))
    elif error is None and not result.warnings and not traced:
        answer = 200, encode_response(result.common, result.items)
    else:
        made = served_by(ctx, log) if traced else None
        mask = _masker(ctx)
        warnings = [mask(w) for w in result.warnings]
        if error is not None:
            answer = (
                STATUS_EXECUTION,
                encode_response(
                    result.common, result.items, warnings, mask(str(error)), result.trace, made
                ),
            )
        else:
            answer = (
                200,
                encode_response(
                    result.common, result.items, warnings, trace=result.trace, provenance=made
                ),
            )
    if len(result.items) > PIECE:
        release(result.items)  # the response's items are this call's: freed in pieces
    if max_answer_bytes is not None and len(answer[1]) > max_answer_bytes:
        # What no write counted (items an operator added, distinct values): measured here.
        return _too_large(
            f"answer too large: {len(answer[1]):,} bytes, more than the limit of "
            f"{max_answer_bytes:,} bytes"
        )
    return answer


def _too_large(message: str) -> tuple[int, bytes]:
    return STATUS_ANSWER_TOO_LARGE, go_json({"error": message}) + b"\n"


def _masker(ctx: Context | None) -> Callable[[str], str]:
    """Masks the secrets of the context's resource manager (and DSN passwords) in a message."""
    provider = resource.from_context(ctx) if ctx is not None else None
    if isinstance(provider, BorrowLog):  # a traced request's: the Manager it lends from
        provider = provider.inner
    if isinstance(provider, resource.Manager):
        return provider.redact
    return resource.lowlevel.redact
