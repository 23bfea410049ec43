"""Opt-in OpenTelemetry tracing (``serve --tracing``): spans of ``/execute`` exported by OTLP.

Off (the default) nothing here runs and nothing of OpenTelemetry is imported:
the server serves as it does without the ``[otel]`` extra, and the request
path holds no tracing code at all (the direct ``/execute`` path, the engine's
step loop and the borrow path are the same objects as without tracing).

On, each serving process (the one process, or every worker of ``--workers N``)
opens its own :class:`Tracing`: an SDK ``TracerProvider`` of its own (the
global one is left to the embedding code) whose spans a batch processor sends
to the OTLP/HTTP endpoint (``--otel-endpoint URL``, the base URL as in
``OTEL_EXPORTER_OTLP_ENDPOINT``; without the flag the exporter reads the
standard ``OTEL_EXPORTER_OTLP_*`` variables). The tree of one request:

- ``POST /execute`` (kind server): the request, child of the caller's W3C
  ``traceparent`` when it sends one; its status code. Traced requests take
  the ASGI endpoint (the direct path is off while tracing).
- one span per operator that runs (``pineapple.operator.name``, ``.type``);
  an operator that raises records its exception.
- ``borrow NAME`` per resource borrow, from the borrow until its release
  (``pineapple.resource.name``, ``.version``: the version served at the borrow).

Calls to other pods (``transform_by_remote_pineapple``) carry the current
span's ``traceparent`` (``pineapple/_outgoing.py``), so the downstream pod's
request span joins the trace. Sampling: parent-based, with
``--trace-sample-ratio`` for traces that start here.

Bounds: the batch processor holds at most its queue (2,048 spans by default,
``OTEL_BSP_MAX_QUEUE_SIZE``); past it spans are dropped, never waited for.
Export runs on the processor's thread, each within the exporter's timeout;
:meth:`Tracing.close` flushes what is queued within ``CLOSE_TIMEOUT_MS``, then
drops what a collector that does not answer still holds (its retries stopped).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pineapple import resource
from pineapple._context import Context
from pineapple._outgoing import with_outgoing_headers
from pineapple.engine import OperatorInput, OperatorOutput
from pineapple.resource import ResourceHandle

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

__all__ = [
    "CLOSE_TIMEOUT_MS",
    "TRACES_PATH",
    "Tracing",
    "TracingError",
    "TracingSettings",
    "open_tracing",
    "require_sdk",
]

CLOSE_TIMEOUT_MS = 2_000
"""How long :meth:`Tracing.close` waits for the queued spans to be exported."""
TRACES_PATH = "/v1/traces"
"""What is appended to ``--otel-endpoint`` (as to ``OTEL_EXPORTER_OTLP_ENDPOINT``)."""

_log = logging.getLogger("pineapple.server")
_Execute = Callable[[Context, OperatorInput, OperatorOutput], None]
_PROPAGATED = (b"traceparent", b"tracestate")


class TracingError(ValueError):
    """Tracing is asked for and cannot start (the ``[otel]`` extra is not installed)."""


def require_sdk() -> None:
    """:class:`TracingError` unless the OpenTelemetry SDK and OTLP/HTTP exporter import."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError as exc:
        raise TracingError(
            f"tracing needs the OpenTelemetry SDK: pip install 'pineapple-py[otel]' ({exc})"
        ) from None


@dataclass(frozen=True)
class TracingSettings:
    """What ``--tracing``, ``--otel-endpoint`` and ``--trace-sample-ratio`` set."""

    endpoint: str | None = None
    """The OTLP/HTTP base URL (``/v1/traces`` is appended); None: the exporter's
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` / its default."""
    sample_ratio: float = 1.0
    """The share of traces started here that are recorded (a caller's decision is kept)."""
    service_name: str = "pineapple"
    """``service.name`` of the spans (``OTEL_SERVICE_NAME`` wins when set)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.sample_ratio <= 1.0:
            raise ValueError(f"the trace sample ratio must be in [0, 1], got {self.sample_ratio}")
        if self.endpoint is not None and not self.endpoint.startswith(("http://", "https://")):
            raise ValueError(f"the OTLP endpoint must be an http(s) URL, got {self.endpoint!r}")

    def traces_url(self) -> str | None:
        """Where spans are posted (None: the exporter decides from the environment)."""
        if self.endpoint is None:
            return None
        return self.endpoint.rstrip("/") + TRACES_PATH


class Tracing:
    """One process's tracer, exporter and the hooks that make its spans."""

    def __init__(self, settings: TracingSettings) -> None:
        require_sdk()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
        from opentelemetry.trace import SpanKind, StatusCode
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.settings = settings
        name = os.environ.get("OTEL_SERVICE_NAME") or settings.service_name
        self._provider = TracerProvider(
            resource=Resource.create({"service.name": name, "process.pid": os.getpid()}),
            sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
        )
        self._exporter = OTLPSpanExporter(endpoint=settings.traces_url())
        self._provider.add_span_processor(BatchSpanProcessor(self._exporter))
        self._tracer: Tracer = self._provider.get_tracer("pineapple.server")
        self._propagator = TraceContextTextMapPropagator()
        self._server_kind = SpanKind.SERVER
        self._error = StatusCode.ERROR
        self._closed = False

    # -- the request ----------------------------------------------------------------------

    def execute_app(self, app: ASGIApp) -> ASGIApp:
        """``app`` (the ``/execute`` endpoint) with a request span around each request."""
        tracer, propagator = self._tracer, self._propagator
        kind, error = self._server_kind, self._error

        async def traced(scope: Scope, receive: Receive, send: Send) -> None:
            carrier = {
                name.decode("latin-1"): value.decode("latin-1")
                for name, value in scope["headers"]  # bounded: the parser's header limit
                if name in _PROPAGATED
            }
            path = scope["path"]
            status = 0

            async def sending(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                await send(message)

            with tracer.start_as_current_span(
                f"{scope['method']} {path}",
                context=propagator.extract(carrier) if carrier else None,
                kind=kind,
                attributes={"http.request.method": scope["method"], "url.path": path},
            ) as span:
                await app(scope, receive, sending)
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(error)

        return traced

    # -- inside the engine ----------------------------------------------------------------

    def wrap_operator(self, name: str, type_name: str, execute: _Execute) -> _Execute:
        """``execute`` run in a span of the operator (``Engine(wrap_execute=...)``)."""
        tracer = self._tracer
        attributes = {"pineapple.operator.name": name, "pineapple.operator.type": type_name}

        def traced(ctx: Context, inp: OperatorInput, out: OperatorOutput) -> None:
            with tracer.start_as_current_span(name, attributes=attributes):
                execute(ctx, inp, out)

        return traced

    def context(self, manager: resource.Manager) -> Context:
        """A snapshot's request context: borrows from ``manager`` in spans, and calls to
        other pods carrying the trace context."""
        provider = _TracedProvider(manager, self._tracer)
        return with_outgoing_headers(resource.with_resources(Context(), provider), self._headers)

    def _headers(self) -> Mapping[str, str]:
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier)
        return carrier

    def close(self) -> None:
        """Export what is queued (within ``CLOSE_TIMEOUT_MS``) and stop the exporter (once)."""
        if self._closed:
            return
        self._closed = True
        # The SDK's flush and shutdown wait out an export under way, retries included
        # (the exporter's own timeout, 10 s): they run on a thread waited for at most
        # CLOSE_TIMEOUT_MS, after which the exporter is shut, which ends its retries.
        closing = threading.Thread(target=self._provider.shutdown, name="tracing-close")
        closing.daemon = True
        closing.start()
        closing.join(CLOSE_TIMEOUT_MS / 1000)
        if closing.is_alive():
            _log.warning("tracing: spans not exported within %d ms dropped", CLOSE_TIMEOUT_MS)
            self._exporter.shutdown()  # type: ignore[no-untyped-call]  # (untyped in the SDK)
            closing.join(CLOSE_TIMEOUT_MS / 1000)


def open_tracing(settings: TracingSettings | None) -> Tracing | None:
    """The process's :class:`Tracing` for ``settings``; None when tracing is off."""
    return None if settings is None else Tracing(settings)


class _TracedProvider:
    """A Manager's borrows, each in a span from the borrow to its release."""

    __slots__ = ("_current", "_manager", "_tracer")

    def __init__(self, manager: resource.Manager, tracer: Tracer) -> None:
        from opentelemetry.trace import get_current_span

        self._manager = manager
        self._tracer = tracer
        self._current = get_current_span

    def get(self, name: str) -> ResourceHandle | None:
        if not self._current().get_span_context().is_valid:
            # Outside a traced request (a thread of the operator's own): no span, rather
            # than a trace of its own that no request leads to.
            return self._manager.get(name)
        span = self._tracer.start_span(
            f"borrow {name}", attributes={"pineapple.resource.name": name}
        )
        handle = self._manager.get(name)
        if handle is None:
            span.set_attribute("pineapple.resource.found", False)
            span.end()
            return None
        version = self._manager.version_of(name)
        if version is not None:
            span.set_attribute("pineapple.resource.version", version)
        # The handle's contract (value, release once, a context manager), not its class:
        # ``ResourceProvider.get`` names the class operators get from a Manager.
        return cast("ResourceHandle", _TracedHandle(handle, span))


class _TracedHandle:
    """A borrowed handle whose release also ends its span (the handle contract)."""

    __slots__ = ("_handle", "_span")

    def __init__(self, handle: Any, span: Span) -> None:
        self._handle = handle
        self._span = span

    @property
    def value(self) -> Any:
        return self._handle.value

    @property
    def released(self) -> bool:
        return bool(self._handle.released)

    def release(self) -> None:
        try:
            self._handle.release()
        finally:
            self._span.end()  # a second end is ignored by the SDK (the handle raises)

    def __enter__(self) -> Any:
        return self._handle.value

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
