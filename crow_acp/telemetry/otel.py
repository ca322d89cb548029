"""The OpenTelemetry SDK behind spans.py: a TracerProvider with a batching OTLP/HTTP exporter.

The only module of crow that imports OpenTelemetry's SDK, and only when setup.py starts tracing.
crow's provider is its own, not the global one: spans that libraries open through the global API
(the MCP SDK's) stay no-ops, so each turn is exactly one trace. The current span still travels in
OpenTelemetry's context, so the MCP SDK passes it on to servers in a request's `_meta` (traceparent).
A span that fails gets status ERROR and `error.type`; a cancelled one (BaseException) just ends.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..util.secrets import redact
from ..version import __version__
from .spans import Kind, Value

KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
SHUTDOWN_SECONDS = 3.0
"""How long an exit waits for the last spans: a collector that is down must not hold crow for its retries."""


class OtelSpan:
    def __init__(self, span: trace.Span) -> None:
        self._span = span

    def set(self, key: str, value: Value) -> None:
        self._span.set_attribute(key, value)

    def fail(self, kind: str, message: str = "") -> None:
        self._span.set_attribute("error.type", kind)
        self._span.set_status(Status(StatusCode.ERROR, message or None))

    def end(self) -> None:
        self._span.end()


class OtelTracer:
    def __init__(self, endpoint: str | None) -> None:
        """`endpoint`: the collector's traces URL; None lets the exporter read OTEL_EXPORTER_OTLP_*."""
        resource = Resource.create({"service.name": "crow", "service.version": __version__})
        # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES apply; crow shuts it down itself (shutdown()).
        self.provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        self._tracer = self.provider.get_tracer("crow", __version__)

    def span(self, name: str, kind: Kind, attributes: dict[str, Value]) -> AbstractContextManager[OtelSpan]:
        return self._current(name, kind, attributes)

    @contextmanager
    def _current(self, name: str, kind: Kind, attributes: dict[str, Value]) -> Iterator[OtelSpan]:
        span = self._tracer.start_span(name, kind=KINDS[kind], attributes=attributes)
        with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
            handle = OtelSpan(span)
            try:
                yield handle
            except Exception as exc:
                handle.fail(type(exc).__name__, redact(str(exc))[:200])
                raise

    def start(self, name: str, kind: Kind, attributes: dict[str, Value]) -> OtelSpan:
        return OtelSpan(self._tracer.start_span(name, kind=KINDS[kind], attributes=attributes))

    def trace_id(self) -> str | None:
        context = trace.get_current_span().get_span_context()
        return format(context.trace_id, "032x") if context.is_valid else None

    def shutdown(self) -> None:
        """Export what is held, for SHUTDOWN_SECONDS at most (the SDK's shutdown takes no timeout: it runs
        on a daemon thread, given up on after that; a collector that is down costs the exit no more)."""
        closing = threading.Thread(target=self.provider.shutdown, name="crow-trace-flush", daemon=True)
        closing.start()
        closing.join(SHUTDOWN_SECONDS)
