"""`crow check`'s report: one line per finding on stdout, keys redacted, the broken ones counted."""

from __future__ import annotations

import sys


class Report:
    """`crow check`'s report: the command's own output, so it goes to stdout line by line."""

    def __init__(self) -> None:
        self.broken = 0

    def line(self, text: str) -> None:
        from crow_acp.util.secrets import hide_url_password, redact

        # An error may quote a key (an endpoint URL that holds one, say) or a database URL with its password.
        sys.stdout.write(hide_url_password(redact(text)) + "\n")

    def section(self, title: str) -> None:
        self.line(f"\n{title}")

    def item(self, name: str, value: str) -> None:
        self.line(f"  {name:<10} {value}")

    def ok(self, text: str) -> None:
        self.line(f"  ✓ {text}")

    def bad(self, text: str) -> None:
        self.broken += 1
        self.line(f"  ✗ {text}")

    def warn(self, text: str) -> None:
        self.line(f"  ⚠ {text}")
