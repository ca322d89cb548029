"""The model credentials `crow setup` stores: $CROW_HOME/credentials.toml, the last source of the model's
endpoint, key and model id (after the command line, the environment and config.toml).

The file holds flat keys (provider, api, base_url, api_key, model). It is written atomically (a temporary
file in the same directory, then os.replace), mode 0600, and read with O_NOFOLLOW: a symlink is refused,
never followed, and so is a file other users can read or one another user owns. Anything else wrong is
one ConfigError line naming the file and the fix.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal, cast

from ..errors import ConfigError
from .private import write_private
from .sections import ModelProfile

FILE_NAME = "credentials.toml"
MAX_BYTES = 64 * 1024
Provider = Literal["openai", "anthropic", "openrouter", "custom"]
Api = Literal["chat", "responses", "anthropic"]
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "openrouter", "custom")
APIS: tuple[Api, ...] = ("chat", "responses", "anthropic")


@dataclass(frozen=True)
class StoredCredentials:
    provider: Provider
    api: Api
    base_url: str
    model: str
    api_key: str | None = None
    """None for a local server that needs no key."""

    def __repr__(self) -> str:  # never the key, whoever prints or logs this
        return f"StoredCredentials(provider={self.provider!r}, base_url={self.base_url!r}, model={self.model!r})"


def credentials_path(home: Path) -> Path:
    return home / FILE_NAME


def load_credentials(home: Path) -> StoredCredentials | None:
    """The stored credentials, None when there are none, or a ConfigError naming the file and the fix."""
    path = credentials_path(home)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ConfigError(f"{path}: is a symlink, which crow never follows: delete it, run `crow setup`") from exc
        raise ConfigError(f"{path}: cannot be read ({exc.strerror}): run `crow setup` again") from exc
    with os.fdopen(fd, "rb") as file:
        _check_private(path, os.fstat(fd))
        raw = file.read(MAX_BYTES + 1)
    return _parse(path, raw)


def _check_private(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{path}: is not a regular file: remove it and run `crow setup`")
    if info.st_uid != os.getuid():
        raise ConfigError(f"{path}: belongs to another user: remove it and run `crow setup`")
    if info.st_mode & 0o077:
        mode = stat.S_IMODE(info.st_mode)
        raise ConfigError(f"{path}: other users can read it (mode {mode:o}), so crow refuses it: `chmod 600 {path}`")


def _parse(path: Path, raw: bytes) -> StoredCredentials:
    fix = f"run `crow setup` again, or delete {path}"
    if len(raw) > MAX_BYTES:
        raise ConfigError(f"{path}: damaged (larger than {MAX_BYTES} bytes): {fix}")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: damaged ({exc}): {fix}") from exc
    if problem := _problem(data):
        raise ConfigError(f"{path}: damaged ({problem}): {fix}")
    return StoredCredentials(
        provider=cast(Provider, data["provider"]),
        api=cast(Api, data["api"]),
        base_url=data["base_url"],
        model=data["model"],
        api_key=data.get("api_key") or None,
    )


def _problem(data: dict[str, object]) -> str | None:
    """What is wrong with the parsed file, or None."""
    known = {field.name for field in fields(StoredCredentials)}
    if unknown := sorted(set(data) - known):
        return f"unknown key {unknown[0]!r}"
    for name in sorted(known - {"api_key"}):
        if not isinstance(data.get(name), str) or not data[name]:
            return f"`{name}` must be a non-empty string"
    if not isinstance(data.get("api_key", ""), str):
        return "`api_key` must be a string"
    if data["provider"] not in PROVIDERS:
        return f"`provider` must be one of {', '.join(PROVIDERS)}"
    if data["api"] not in APIS:
        return f"`api` must be one of {', '.join(APIS)}"
    if not str(data["base_url"]).startswith(("http://", "https://")):
        return "`base_url` must start with http:// or https://"
    return None


def save_credentials(home: Path, credentials: StoredCredentials) -> Path:
    """Write the credentials, replacing any (a symlink in their place included, never followed)."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = credentials_path(home)
    write_private(path, _toml(credentials), durable=True)
    return path


def _toml(credentials: StoredCredentials) -> str:
    """Flat TOML: JSON's string escapes are valid TOML basic strings."""
    values = asdict(credentials).items()
    return "".join(f"{name} = {json.dumps(value)}\n" for name, value in values if value is not None)


def remove_credentials(home: Path) -> bool:
    """Delete the stored credentials (a symlink itself, not its target); whether there were any."""
    try:
        credentials_path(home).unlink()
    except FileNotFoundError:
        return False
    return True


def with_stored(profile: ModelProfile, stored: StoredCredentials | None) -> ModelProfile:
    """The profile with what it leaves unset taken from the stored credentials: their base URL when it
    names none, and their key only when it is sent to the URL it was stored for and the config has none."""
    if stored is None:
        return profile
    base_url = profile.base_url or stored.base_url
    update: dict[str, str] = {} if profile.base_url else {"base_url": base_url}
    if stored.api_key and profile.api_key is None and base_url == stored.base_url:
        update["api_key"] = stored.api_key
    return profile.model_copy(update=update) if update else profile
