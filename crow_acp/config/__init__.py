"""Configuration: what the user sets (command line, environment, $CROW_HOME/config.toml, defaults),
checked strictly, with every mistake said in TOML's words.

    sections.py   Section, and the tables of what crow talks to: models, MCP servers, other ACP agents
    tables.py     the other tables: permissions, sandbox, sessions, timeouts, limits, ...
    settings.py   Config (every table, one field each), and how config.toml is found and loaded
    errors.py     pydantic's validation errors as one line per mistake
    protected.py  which paths a write always asks for (the [permissions] protected patterns)

May import: crow_acp.errors and the standard library, pydantic and tomllib; nothing else of crow.

Also in this room:

    credentials.py  The model credentials `crow setup` stores: $CROW_HOME/credentials.toml, the last source of the...
    key_source.py   Where the model key comes from, and the one answer to "can crow's own agent call its model?"...
    private.py      $CROW_HOME and what crow writes in it are its user's alone, whatever the umask
"""

from .sections import AgentConfig, McpServerConfig, ModelProfile, Policy, Section
from .settings import Config, crow_home, load_config, read_toml, resolve_command
from .tables import (
    CompactionConfig,
    LimitsConfig,
    PermissionConfig,
    PromptConfig,
    SandboxConfig,
    SessionsConfig,
    StoreConfig,
    Timeouts,
    TitleConfig,
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
