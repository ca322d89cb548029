"""The public names: what crow_acp exports lazily, and the plugin-facing module that declares them."""

from __future__ import annotations

import crow_acp
import crow_acp.api


def test_crow_acp_exports_are_listed_in_all_and_import():
    assert sorted(crow_acp.__all__) == sorted(crow_acp._EXPORTS), "a lazily exported name is missing from __all__"
    for name in crow_acp.__all__:
        assert getattr(crow_acp, name) is not None


def test_the_plugin_api_module_holds_every_name_a_plugin_writes_against():
    for name in crow_acp.api.__all__:
        assert getattr(crow_acp.api, name) is not None
    for name in ("CrowCallbacks", "SessionAccess", "SlashCommand", "Tool", "ToolContext", "ToolDecision", "EndTurnArgs"):
        assert getattr(crow_acp, name) is getattr(crow_acp.api, name), name
