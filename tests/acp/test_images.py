"""Images over ACP: prompt images and MCP tool images reach a vision model as image parts;
other models get a clear refusal; images are checked, stored and replayed."""

from __future__ import annotations

import base64

import anyio
import pytest
from acp.schema import ImageContentBlock
from support.helpers import (
    CORE_AGENT,
    RecordingClient,
    assert_strict_pairing,
    crow_env,
    echo_stdio,
    text,
    write_config,
)
from support.hosted import hosted_crow

from crow_acp.testing import Reply, ScriptedModel, ToolCall

pytestmark = pytest.mark.anyio
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
PROFILES = """
model = "eyes"
[models.eyes]
model = "eyes-id"
vision = true
[models.blind]
model = "blind-id"
"""


def image(data: str = PIXEL, mime: str = "image/png") -> ImageContentBlock:
    return ImageContentBlock(type="image", data=data, mime_type=mime)


def image_urls(message: dict) -> list[str]:
    content = message["content"]
    return [p["image_url"]["url"] for p in content if p["type"] == "image_url"] if isinstance(content, list) else []


async def test_prompt_images_reach_a_vision_model_and_replay(crow_home, tmp_path):
    write_config(crow_home, PROFILES)
    client = RecordingClient()
    async with ScriptedModel(default=Reply(text="I see it")) as model:
        env = crow_env(crow_home, model.base_url)
        with anyio.fail_after(60):
            async with hosted_crow(client, env, "--agent", CORE_AGENT) as (conn, _):
                init_caps = await conn.initialize(protocol_version=1)
                assert init_caps.agent_capabilities.prompt_capabilities.image is True
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                await conn.prompt(session_id=sid, prompt=[text("what is this?"), image()])
                [user] = [m for m in model.requests[-1]["messages"] if m["role"] == "user"]
                assert user["content"][0] == {"type": "text", "text": "what is this?"}
                assert image_urls(user) == [f"data:image/png;base64,{PIXEL}"]

                asked = len(model.requests)
                bad = [
                    (image("not base64!!"), "not valid base64"),
                    (image(PIXEL, "image/svg+xml"), "not supported"),
                    (image(base64.b64encode(b"GIF89a....").decode(), "image/png"), "not a PNG image"),
                    (image("A" * (8 * 1024 * 1024)), "larger than 5 MB"),
                ]
                for block, why in bad:
                    await conn.prompt(session_id=sid, prompt=[text("and this?"), block])
                    assert why in client.text(), why
                await conn.set_config_option(config_id="model", session_id=sid, value="blind")
                await conn.prompt(session_id=sid, prompt=[text("and now?"), image()])
                assert "does not accept images" in client.text()
                assert len(model.requests) == asked  # nothing refused reached the model

                # The blind model gets the earlier image as a note, never as an image part (no provider 400).
                await conn.prompt(session_id=sid, prompt=[text("describe it in words")])
                first = next(m for m in model.requests[-1]["messages"] if m["role"] == "user")
                assert first["content"] == "what is this?\n\n[image omitted: the current model does not accept images]"

            replay = RecordingClient()
            async with hosted_crow(replay, env, "--agent", CORE_AGENT) as (conn, _):
                await conn.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                shown = [u.content for u in replay.of("user_message_chunk")]
                assert [(b.type, getattr(b, "data", None)) for b in shown[:2]] == [("text", None), ("image", PIXEL)]
                assert len(shown) == 3  # two blocks, then the last prompt; refused prompts left no trace


async def test_an_mcp_tool_image_reaches_a_vision_model_in_a_valid_history(crow_home, tmp_path):
    write_config(crow_home, PROFILES)
    script = [
        Reply(tool_calls=[ToolCall("echo__image", {}, id="img"), ToolCall("echo__echo", {"text": "x"}, id="e")]),
        Reply(text="a pixel"),
    ]
    async with ScriptedModel(script) as model:
        async with hosted_crow(RecordingClient(), crow_env(crow_home, model.base_url)) as (conn, _):
            with anyio.fail_after(60):
                sid = (await conn.new_session(cwd=str(tmp_path), mcp_servers=[echo_stdio()])).session_id
                await conn.prompt(session_id=sid, prompt=[text("show me the image tool")])
    messages = [m for m in model.requests[1]["messages"] if m["role"] != "system"]
    roles = [m["role"] for m in messages]
    # Both results first, then an assistant sentence (strict providers refuse user right after tool), then the image.
    assert roles[-4:] == ["tool", "tool", "assistant", "user"], roles
    assert image_urls(messages[-1]) == [f"data:image/png;base64,{PIXEL}"]
    assert all(isinstance(m["content"], str) for m in messages if m["role"] == "tool")
    assert_strict_pairing(model.requests[1]["messages"])
