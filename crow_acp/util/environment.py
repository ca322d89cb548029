"""What crow's child processes inherit of its environment: an allow list, never "everything but the keys".

Commands (`run_command`, in or outside the sandbox), stdio MCP servers and foreign members get only
the CORE variables a shell and a toolchain need (locale, PATH, HOME, TERM, USER, the proxies, where
the usual toolchains live), plus the names `[sandbox] env_inherit` adds, plus what a server's or a
member's config passes explicitly. `[sandbox] inherit = "all"` passes everything instead, except:

- anything named like a secret (`*_TOKEN`, `*SECRET*`, `*_KEY`, `*PASSWORD*`, ...) and crow's own
  variables (CROW_SERVE_TOKEN, CROW_DATABASE_URL);
- the ways out of the sandbox: agent and bus sockets (SSH_AUTH_SOCK, DBUS_SESSION_BUS_ADDRESS,
  DOCKER_HOST, GPG_AGENT_INFO, ...).

A name listed in `env_inherit` is passed whatever it is called: the user named it. crow's model keys
are never passed but by a server's or a member's explicit `env`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping

CORE = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "COLORTERM", "TMPDIR", "TZ", "LANG", "LANGUAGE", "LC_*",
    "http_proxy", "https_proxy", "ftp_proxy", "all_proxy", "no_proxy",
    "HTTP_PROXY", "HTTPS_PROXY", "FTP_PROXY", "ALL_PROXY", "NO_PROXY",
    # where toolchains live when not in their default place: without them `cargo build` or `go test` breaks
    "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "GOPATH", "GOROOT", "GOMODCACHE", "GOCACHE", "GOFLAGS",
    "NVM_DIR", "NVM_BIN", "NODE_PATH", "PYENV_ROOT", "PYENV_VERSION", "VIRTUAL_ENV", "CONDA_PREFIX",
    "JAVA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "PIP_INDEX_URL",
)  # fmt: skip
"""Passed to every child process (fnmatch patterns, case-sensitive)."""

WAYS_OUT = (
    "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DBUS_SYSTEM_BUS_ADDRESS",
    "DOCKER_HOST", "DOCKER_CONTEXT", "CONTAINER_HOST", "PODMAN_HOST", "XDG_RUNTIME_DIR", "WAYLAND_DISPLAY",
    "DISPLAY", "XAUTHORITY", "KRB5CCNAME", "SYSTEMD_EXEC_PID", "INVOCATION_ID", "NOTIFY_SOCKET",
)  # fmt: skip
"""Sockets and sessions outside the sandbox: never passed on their own, even with inherit = "all"."""

SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|COOKIE|_KEY$|^KEY$|_KEYS$|_PAT$", re.I)
"""Names that hold a secret: their values are redacted (secrets.py) and never inherited on their own."""
OWN = "CROW_"
"""crow's own settings (its serve token, its database URL with a password): never inherited on their own."""

_mode = ["core"]
_listed: list[str] = []


def configure(mode: str, names: Iterable[str]) -> None:
    """`[sandbox] inherit` and `env_inherit`, once per process (secrets.protect does it)."""
    _mode[0], _listed[:] = mode, list(names)


def secret_named(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def inherited(base: Mapping[str, str], keys: frozenset[str]) -> dict[str, str]:
    """The variables of `base` a child gets: the allow list (or all but secrets and ways out), never `keys`."""
    listed, everything = tuple(_listed), _mode[0] == "all"
    kept: dict[str, str] = {}
    for name, value in base.items():
        if name in keys:
            continue
        if _matches(name, listed):
            kept[name] = value
        elif _matches(name, CORE) or (everything and _harmless(name)):
            kept[name] = value
    return kept


def _harmless(name: str) -> bool:
    return name not in WAYS_OUT and not secret_named(name) and not name.startswith(OWN)


def core_names() -> list[str]:
    """The names an editor's terminal keeps (its environment is the editor's: crow sends the names only)."""
    extra = list(_listed)
    locale = ["LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE", "LC_NUMERIC", "LC_TIME", "LC_MONETARY"]
    plain = [name for name in CORE if "*" not in name]
    return list(dict.fromkeys([*plain, *locale, *(name for name in extra if "*" not in name)]))
