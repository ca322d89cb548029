"""The public names: what crow_acp exports lazily, and the plugin-facing module that declares them."""

from __future__ import annotations

import pytest

import crow_acp
import crow_acp.api
import crow_acp.core.hooks


def test_crow_acp_exports_are_listed_in_all_and_import():
    assert {*crow_acp._ELSEWHERE, *crow_acp.api.__all__} == set(crow_acp.__all__)
    for name in ("AcpAgent", "MultiAgent", "CrowCallbacks", "SessionAccess"):  # the design's contract
        assert name in crow_acp.__all__, name
    for name in crow_acp.__all__:
        assert getattr(crow_acp, name) is not None
    star: dict[str, object] = {}
    exec("from crow_acp import *", star)
    assert set(crow_acp.__all__) <= set(star)


def test_hooks_module_holds_only_what_it_implements():
    """The plugin types are declared once, in api.py; hooks.py re-exports none of them."""
    assert not hasattr(crow_acp.core.hooks, "CrowCallbacks")
    assert not hasattr(crow_acp.core.hooks, "SlashCommand")


def test_an_unknown_or_private_name_is_an_attribute_error():
    for name in ("NoSuchThing", "_private", "__wrapped__"):
        with pytest.raises(AttributeError):
            getattr(crow_acp, name)


def test_the_plugin_api_module_holds_every_name_a_plugin_writes_against():
    for name in crow_acp.api.__all__:
        assert getattr(crow_acp.api, name) is not None
    for name in (
        "CrowCallbacks",
        "SessionAccess",
        "SlashCommand",
        "Tool",
        "ToolContext",
        "ToolDecision",
        "EndTurnArgs",
    ):
        assert getattr(crow_acp, name) is getattr(crow_acp.api, name), name
