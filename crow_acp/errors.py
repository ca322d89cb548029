"""Crow's error tree.

    CrowError
    ├── ConfigError      the user's or developer's setup is wrong (no API key, bad config.toml)
    ├── ModelError       the model endpoint failed (HTTP status, timeout, cut stream)
    └── CommandError     a slash command's handler raised

An unknown session is the ACP error resource_not_found (-32002). Tool failures are not exceptions: they are ToolResult(is_error=True) and go back to the model.
"""


class CrowError(Exception):
    """Base class for errors crow reports to the user."""


class ConfigError(CrowError):
    """The configuration cannot work; the message says what to change."""


class ModelError(CrowError):
    """The model endpoint failed; the message is fit to show a user."""


class CommandError(CrowError):
    """A slash command failed; the message names the command and the error."""
