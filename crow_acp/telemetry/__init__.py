"""What crow tells an operator about itself: traces (OpenTelemetry), and the context of its log lines.

    spans.py     the seam the loop opens spans through: a no-op until tracing starts (one global check)
    gen_ai.py    the spans of a turn, named and attributed as the OpenTelemetry GenAI conventions say
    otel.py      the OpenTelemetry SDK behind the seam, exporting over OTLP/HTTP (imported only when on)
    setup.py     whether tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT or [telemetry]), started and flushed
    log_json.py  --log-format json: one JSON object per log line, with the user, session, trace and event

May import: crow_acp.config, util, events and the standard library; opentelemetry only in otel.py.
"""
