"""`--log-format json`: each log record as one JSON object on one line.

    {"time": "2026-12-02T00:40:00.123Z", "level": "INFO", "logger": "crow_acp.web.run",
     "message": "...", "user": "ana", "session": "3f2a...", "trace_id": "4bf9...", "event": "turn_failed"}

`user`, `session` and `trace_id` come from the context the record was made in (null outside a turn or
a request); `event` from `extra={"event": ...}`; `exception` is the traceback, when there is one. The
message is already redacted of keys by the record factory (util/secrets.py); the formatter redacts the
whole line again, so no field of another origin carries one either.
"""

from __future__ import annotations

import json
import logging
import time

from ..util.secrets import redact
from . import spans


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": _iso(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "user": spans.USER.get(),
            "session": spans.SESSION.get(),
            "trace_id": spans.trace_id(),
            "event": getattr(record, "event", None),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        return redact(json.dumps(line, ensure_ascii=False, default=str))


def _iso(created: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created)) + f".{int(created % 1 * 1000):03d}Z"
