"""`crow chat` under a real pty, typing while a turn runs (issue 31): Enter queues the line (shown as queued)
and the conversation sends it once the turn ends; Enter on an empty line steers the queued message into the
running turn instead, which reaches the model at its next step."""

from __future__ import annotations

import asyncio
import threading
import time

from support.helpers import crow_env
from test_chat import TIMEOUT, leave, say, spawn, started, user_texts

from crow_acp.testing import Reply, ScriptedModel


def wait_until(predicate, timeout: float = TIMEOUT) -> None:
    """Poll another thread's state (the scripted model's requests): nothing signals it to this one."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_line_typed_during_a_turn_is_queued_and_sent_after_it(crow_home, tmp_path):
    release = threading.Event()

    async def first(request: dict) -> Reply:
        await asyncio.to_thread(release.wait, TIMEOUT)  # the turn runs until the test has typed
        return Reply(text="first done")

    with ScriptedModel([first, Reply(text="second done")]) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "chat")
        started(child)
        say(child, "first")
        wait_until(lambda: len(model.requests) == 1)
        child.send("second\r")
        child.expect("queued: second")
        release.set()
        child.expect("first done")
        child.expect("second done")
        status, screen = leave(child, tmp_path)
    assert status == 0
    assert [user_texts(r)[-1] for r in model.requests] == ["first", "second"]
    assert user_texts(model.requests[1])[-2:] == ["first", "second"]  # after the first turn, not inside it
    assert screen.index("first done") < screen.index("second done")


def test_enter_on_an_empty_line_steers_the_queued_message_into_the_turn(crow_home, tmp_path):
    script = [Reply(text="long " * 300, chunks=300, hold_after=8), Reply(text="steered answer")]
    with ScriptedModel(script) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "chat")
        started(child)
        say(child, "go")
        child.expect("long")
        child.send("change course\r")
        child.expect("queued: change course")
        child.send("\r")
        child.expect("steered: change course")
        child.expect("steered answer")
        status, _ = leave(child, tmp_path)
    assert status == 0
    assert len(model.requests) == 2  # steered into the turn: nothing was left to send after it
    assert user_texts(model.requests[1])[-2:] == ["go", "change course"]
    assert model.requests[1]["messages"][-2]["role"] == "assistant"  # the cut reply, as shown, then the message
