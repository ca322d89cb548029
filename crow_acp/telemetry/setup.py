"""Whether a crow process traces, and tracing started and flushed: `crow acp`, `crow run`, `crow serve`.

Tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set (the
exporter reads them itself, with OTEL_EXPORTER_OTLP_HEADERS), or [telemetry] traces_endpoint is; it is
off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. Off, OpenTelemetry is never imported.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

from ..config import Config
from . import spans

log = logging.getLogger(__name__)
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


def wanted(config: Config) -> tuple[bool, str | None]:
    """(whether to trace, the traces URL to give the exporter: None when the environment names it)."""
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False, None
    if os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False, None
    if any(os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES):
        return True, None
    base = config.telemetry.traces_endpoint
    return (True, base.rstrip("/") + "/v1/traces") if base else (False, None)


def start_tracing(config: Config) -> bool:
    """Install the OpenTelemetry tracer if tracing is wanted; whether it now traces."""
    on, endpoint = wanted(config)
    if not on or spans.tracing():
        return spans.tracing()
    from .otel import OtelTracer

    spans.install(OtelTracer(endpoint), content=config.telemetry.record_content)
    log.info("tracing to %s", endpoint or "the OTLP endpoint of the environment")
    return True


def stop_tracing() -> None:
    """Export the spans still held, then stop (on every way out of a command); a no-op when off."""
    spans.shutdown()


@contextmanager
def traced(config: Config) -> Iterator[bool]:
    """Tracing on (if wanted) for the body, flushed on every way out of it."""
    try:
        yield start_tracing(config)
    finally:
        stop_tracing()


def log_format(flag: str | None, config: Config) -> str:
    """--log-format, else CROW_LOG_FORMAT, else [telemetry] log_format (configure_logging refuses a bad one)."""
    return flag or os.environ.get("CROW_LOG_FORMAT", "").strip().lower() or config.telemetry.log_format
