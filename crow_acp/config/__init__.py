"""Configuration: what the user sets (command line, environment, $CROW_HOME/config.toml, defaults),
checked strictly, with every mistake said in TOML's words.

    settings.py   the tables and keys, and how config.toml is found and loaded
    errors.py     pydantic's validation errors as one line per mistake
    protected.py  which paths a write always asks for (the [permissions] protected patterns)

May import: crow_acp.errors and the standard library, pydantic and tomllib; nothing else of crow.
"""

from .settings import (
    AgentConfig,
    CompactionConfig,
    Config,
    LimitsConfig,
    McpServerConfig,
    ModelProfile,
    PermissionConfig,
    Policy,
    PromptConfig,
    SandboxConfig,
    Section,
    SessionsConfig,
    StoreConfig,
    Timeouts,
    TitleConfig,
    crow_home,
    load_config,
    read_toml,
    resolve_command,
)

__all__ = [
    "AgentConfig",
    "CompactionConfig",
    "Config",
    "LimitsConfig",
    "McpServerConfig",
    "ModelProfile",
    "PermissionConfig",
    "Policy",
    "PromptConfig",
    "SandboxConfig",
    "Section",
    "SessionsConfig",
    "StoreConfig",
    "Timeouts",
    "TitleConfig",
    "crow_home",
    "load_config",
    "read_toml",
    "resolve_command",
]
