"""The newer client capabilities survive the SDK's schema-1.19 models and reach the agent."""

from __future__ import annotations

from crow_acp.acp.rpc.shapes import ClientFeatures, NewerInitializeRequest


def test_advertised_features_are_read_and_nothing_else() -> None:
    request = NewerInitializeRequest.model_validate(
        {
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": True},
                "elicitation": {"form": {}},
                "session": {"notices": {}, "compaction": None},
                "subagents": {},
                "plan": True,  # not an object: not advertised
            },
        }
    )
    assert request.client_features == ClientFeatures(elicitation_form=True, notices=True, subagents=True)
    assert request.client_capabilities is not None and request.client_capabilities.fs.read_text_file


def test_malformed_or_missing_capabilities_advertise_nothing() -> None:
    for caps in (None, [], "x", {"session": []}, {"elicitation": {"form": "yes"}}):
        request = NewerInitializeRequest.model_validate({"protocolVersion": 1, "clientCapabilities": caps or None})
        assert request.client_features == ClientFeatures()
