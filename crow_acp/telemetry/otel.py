"""The OpenTelemetry SDK behind spans.py: crow's spans, batched and exported by the SDK over OTLP/HTTP.

The only module of crow that imports OpenTelemetry's SDK, and only when setup.py starts tracing.
crow's provider is its own, not the global one: spans that libraries open through the global API
(the MCP SDK's, the ACP SDK's) stay no-ops, so each turn is exactly one trace.

A span here is a small record: its ids, attributes (one dict, set as they come), times and status.
When it ends it becomes the SDK's ReadableSpan, handed straight to the BatchSpanProcessor and the OTLP
exporter. The SDK's own Span (a lock, bounded attributes cleaned one by one, a sampler and processor
call at start, a copy at end) cost a tool turn about as much as encoding it, and its many objects
lived on in the export queue and made the garbage collector's full passes more frequent
(benchmarks/serve_telemetry.py). What is kept of the SDK's pipeline: the resource (OTEL_SERVICE_NAME,
OTEL_RESOURCE_ATTRIBUTES), the sampler (OTEL_TRACES_SAMPLER, asked once per trace at its root span;
by default every turn is sampled), the batching (OTEL_BSP_*) and the exporter (OTEL_EXPORTER_OTLP_*).
SpanLimits do not apply: crow's attribute values are bounded where they are made (gen_ai.py).

The parent of a span is crow's own context variable. A client span (a model call, an MCP request) is
also OpenTelemetry's current span while it runs, so the MCP SDK passes it on to servers in a
request's `_meta` (traceparent). A span that fails gets status ERROR and `error.type`; a cancelled one
(BaseException) just ends.
"""

from __future__ import annotations

import contextvars
import random
import threading
import time
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ..util.secrets import redact
from ..version import __version__
from .spans import Kind, Value

KINDS = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
SHUTDOWN_SECONDS = 3.0
"""How long an exit waits for the last spans: a collector that is down must not hold crow for its retries."""
SAMPLED, UNSAMPLED = TraceFlags(TraceFlags.SAMPLED), TraceFlags(TraceFlags.DEFAULT)
UNSET = Status(StatusCode.UNSET)
CURRENT: contextvars.ContextVar[SpanContext | None] = contextvars.ContextVar("crow_span", default=None)
"""The span open here: the parent of the next one."""


class FixedResource(Resource):
    """Hashed once: the OTLP encoder groups every span by its resource, and a Resource hashes a JSON dump of
    its attributes each time it is asked."""

    def __init__(self, resource: Resource) -> None:
        super().__init__(resource.attributes, resource.schema_url)
        self._hash = super().__hash__()

    def __hash__(self) -> int:
        return self._hash


class OtelSpan:
    """One span from its start to its end; a context manager for the spans around a body."""

    __slots__ = ("_tokens", "_tracer", "attributes", "context", "kind", "name", "parent", "start", "status")

    def __init__(self, tracer: OtelTracer, name: str, kind: Kind, attributes: dict[str, Value]) -> None:
        self._tracer, self.name, self.kind, self.status = tracer, name, kind, UNSET
        self.parent = CURRENT.get()
        self.context = tracer.context_for(self.parent, name, kind, attributes)
        self.attributes: dict[str, Any] = attributes  # gen_ai.py makes a new dict for every span
        self.start = time.time_ns()
        self._tokens: tuple[Any, ...] = ()

    def set(self, key: str, value: Value) -> None:
        self.attributes[key] = value

    def fail(self, kind: str, message: str = "") -> None:
        self.attributes["error.type"] = kind
        self.status = Status(StatusCode.ERROR, message or None)

    def end(self) -> None:
        if self.context.trace_flags.sampled:
            self._tracer.emit(self)

    def __enter__(self) -> OtelSpan:
        token = CURRENT.set(self.context)
        if self.kind == "client":  # OpenTelemetry's current span too: a library that propagates names it
            carried = trace.set_span_in_context(NonRecordingSpan(self.context))
            self._tokens = (token, otel_context.attach(carried))
        else:
            self._tokens = (token,)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        if len(self._tokens) > 1:
            otel_context.detach(self._tokens[1])
        CURRENT.reset(self._tokens[0])
        if isinstance(error, Exception):
            self.fail(type(error).__name__, redact(str(error))[:200])
        self.end()


class OtelTracer:
    def __init__(self, endpoint: str | None, processor: SpanProcessor | None = None) -> None:
        """`endpoint`: the collector's traces URL; None lets the exporter read OTEL_EXPORTER_OTLP_*.
        `processor`: where ended spans go (the batching OTLP exporter unless given)."""
        resource = Resource.create({"service.name": "crow", "service.version": __version__})
        # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES apply; crow shuts it down itself (shutdown()).
        self.provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.processor = processor or BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint))
        self.provider.add_span_processor(self.processor)  # shut down (its last batch sent) with the provider
        self._resource = FixedResource(self.provider.resource)
        self._scope = InstrumentationScope("crow", __version__)

    def span(self, name: str, kind: Kind, attributes: dict[str, Value]) -> OtelSpan:
        return OtelSpan(self, name, kind, attributes)

    def start(self, name: str, kind: Kind, attributes: dict[str, Value]) -> OtelSpan:
        return OtelSpan(self, name, kind, attributes)

    def context_for(self, parent: SpanContext | None, name: str, kind: Kind, attributes: Any) -> SpanContext:
        """A new span's ids: its parent's trace, or a new trace the sampler is asked about."""
        span_id = random.getrandbits(64) or 1
        if parent is not None:
            return SpanContext(parent.trace_id, span_id, False, parent.trace_flags)
        trace_id = random.getrandbits(128) or 1
        decision = self.provider.sampler.should_sample(None, trace_id, name, KINDS[kind], attributes)
        return SpanContext(trace_id, span_id, False, SAMPLED if decision.decision.is_sampled() else UNSAMPLED)

    def emit(self, span: OtelSpan) -> None:
        ended = ReadableSpan(
            span.name,
            span.context,
            span.parent,
            self._resource,
            span.attributes,
            kind=KINDS[span.kind],
            status=span.status,
            start_time=span.start,
            end_time=time.time_ns(),
            instrumentation_scope=self._scope,
        )
        self.processor.on_end(ended)

    def trace_id(self) -> str | None:
        current = CURRENT.get()
        return format(current.trace_id, "032x") if current is not None else None

    def shutdown(self) -> None:
        """Export what is held, for SHUTDOWN_SECONDS at most (the SDK's shutdown takes no timeout: it runs
        on a daemon thread, given up on after that; a collector that is down costs the exit no more)."""
        closing = threading.Thread(target=self.provider.shutdown, name="crow-trace-flush", daemon=True)
        closing.start()
        closing.join(SHUTDOWN_SECONDS)
