"""`crow chat` (and `crow` alone) under a real pseudo-terminal: a conversation of many turns in one session,
slash commands, Ctrl-C that cancels a turn and stays, /resume, and Ctrl-D that ends it with status 0."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pexpect
import pytest
from support.helpers import crow_command, crow_env
from support.spawn import python as spawn_python

from crow_acp.testing import Reply, ScriptedModel, ToolCall

TIMEOUT = 60
STYLE = r"(?:\x1b\[[0-9;]*m)*"
PROMPT = re.escape("\x1b[?2004h")
"""The line editor is reading: it turns bracketed paste on each time it starts."""
REJECT = r"\[N\] reject: "


def shown(*parts: str) -> str:
    return STYLE.join(re.escape(part) for part in parts)


def spawn(env: dict[str, str], cwd: Path, *args: str) -> pexpect.spawn:
    child = pexpect.spawn(
        spawn_python(),
        ["-m", "crow", *args],
        cwd=str(cwd),
        # A pty answers no cursor position request (a terminal does): the line editor is told not to ask.
        env={**env, "TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1"},
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(50, 120),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Ctrl-C reaches crow as in a terminal
    )
    child.logfile_read = open(cwd / "screen.log", "w")
    return child


def started(child: pexpect.spawn) -> str:
    """The conversation's first session id, from its welcome line."""
    child.expect(r"session ([0-9a-f]{8,}) · /help")
    session_id = child.match.group(1)
    child.expect(PROMPT)
    return session_id


def say(child: pexpect.spawn, text: str) -> None:
    child.send(text + "\r")


def leave(child: pexpect.spawn, cwd: Path) -> tuple[int, str]:
    """Ctrl-D on an empty line; the status and everything the screen showed."""
    child.expect(PROMPT)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    child.logfile_read.close()
    return child.exitstatus, (cwd / "screen.log").read_text()


def write(path: str) -> ToolCall:
    return ToolCall("write_file", {"path": path, "content": "x\n"})


def user_texts(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user" and isinstance(m["content"], str)]


def test_three_turns_in_one_session_with_markdown_multiline_input_and_always(crow_home, tmp_path):
    script = [
        Reply(text="# Plan\n\nSome **bold** words and `code`."),
        Reply(text="Writing.", tool_calls=[write("a.txt")]),
        Reply(text="Wrote a."),
        Reply(tool_calls=[write("b.txt")]),
        Reply(text="Wrote b too."),
    ]
    with ScriptedModel(script) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "chat")
        started(child)
        say(child, "hello")
        child.expect(shown("bold", " words"))
        child.expect(re.escape("[end_turn · "))
        child.expect(PROMPT)
        child.send("line one\x1b\r")  # Esc Enter: a new line, not sent yet
        say(child, "line two")
        child.expect(REJECT)
        child.sendline("a")  # always: for the rest of the conversation
        child.expect("Wrote a.")
        child.expect(PROMPT)
        say(child, "and b")
        child.expect("Wrote b too.")
        status, screen = leave(child, tmp_path)
    assert status == 0, screen
    assert screen.count("[N] reject") == 1, "the 'always' answer held for the third turn"
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == ["a.txt", "b.txt"]
    assert "**bold**" not in screen and "# Plan" not in screen and "`code`" not in screen, "Markdown is rendered"
    assert user_texts(model.requests[-1]) == ["hello", "line one\nline two", "and b"], "one session, three turns"
    history = crow_home / "chat_history"
    assert history.stat().st_mode & 0o077 == 0, "the input history is private"
    assert history.read_text().splitlines() == ['"hello"', '"line one\\nline two"', '"and b"']
    assert "Traceback" not in screen


def test_mode_plan_then_a_write_is_refused_without_asking(crow_home, tmp_path):
    script = [Reply(tool_calls=[write("planned.txt")]), Reply(text="I will only plan.")]
    with ScriptedModel(script) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "chat")
        started(child)
        child.send("/mode p")
        child.expect(" plan ")  # the completion menu offers the one mode that starts so
        child.send("\t")
        child.expect("lan")  # Tab inserts the rest
        child.send("\r")
        child.expect(shown("mode: plan"))
        say(child, "write it")
        child.expect("I will only plan.")
        status, screen = leave(child, tmp_path)
    assert status == 0, screen
    assert not (tmp_path / "planned.txt").exists()
    assert "[N] reject" not in screen
    assert "plan" in str(model.requests[1]["messages"][-1]["content"]).lower()


def test_ctrl_c_cancels_the_turn_and_the_conversation_goes_on(crow_home, tmp_path):
    script = [
        Reply(text="word " * 2000, delay=0.02),
        Reply(tool_calls=[write("never.txt")]),
        Reply(text="Still here."),
    ]
    with ScriptedModel(script, default=Reply(text="unused")) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "chat")
        started(child)
        say(child, "talk long")
        child.expect("word word word")
        child.sendintr()
        child.expect(re.escape("[cancelled · "))
        child.expect(PROMPT)
        say(child, "write")
        child.expect(REJECT)
        child.sendintr()  # at a permission question too
        child.expect(re.escape("[cancelled · "))
        child.expect(PROMPT)
        child.send("half a line")
        child.sendintr()  # at the prompt: the line is dropped
        say(child, "still there?")
        child.expect("Still here.")
        status, screen = leave(child, tmp_path)
    assert status == 0, screen
    assert not (tmp_path / "never.txt").exists()
    assert user_texts(model.requests[-1]) == ["talk long", "write", "still there?"]
    assert "Traceback" not in screen


def test_resume_an_earlier_session_shows_it_compactly_and_continues_it(crow_home, tmp_path):
    script = [
        Reply(text="The word is heron.\nMore detail here."),
        Reply(text="Other talk."),
        Reply(text="It was heron."),
    ]
    with ScriptedModel(script) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "chat")
        first = started(child)
        say(child, "remember heron")
        child.expect("More detail here.")
        child.expect(PROMPT)
        say(child, "/new")
        child.expect(r"new session ([0-9a-f]{8,})")
        second = child.match.group(1)
        say(child, "something else")
        child.expect("Other talk.")
        child.expect(PROMPT)
        say(child, "/sessions")
        child.expect(re.escape(f"* {second}"))
        child.expect(re.escape(first))
        child.expect(PROMPT)
        say(child, "/resume nosuchsession")
        child.expect(shown("crow: no stored session 'nosuchsession'"))
        child.expect(PROMPT)
        say(child, f"/resume {first}")
        child.expect(shown("> ", "remember heron"))
        child.expect(re.escape("The word is heron. …"))  # one line per message
        child.expect(f"resumed session {first}")
        child.expect(PROMPT)
        say(child, "what was the word?")
        child.expect("It was heron.")
        status, screen = leave(child, tmp_path)
    assert status == 0, screen
    assert user_texts(model.requests[-1]) == ["remember heron", "what was the word?"]


def test_crow_alone_on_a_terminal_is_a_conversation_and_elsewhere_asks_for_a_command(crow_home, tmp_path):
    with ScriptedModel([]) as model:
        env = crow_env(crow_home, model.base_url)
        child = spawn(env, tmp_path)
        started(child)
        say(child, "/cost")
        child.expect("no usage reported yet")
        status, screen = leave(child, tmp_path)
        assert status == 0, screen
        for args in ([], ["chat"]):
            piped = subprocess.run(
                crow_command(*args), env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
            )
            assert piped.returncode == 2, piped
            assert "Traceback" not in piped.stderr
        assert (
            "required: COMMAND"
            in subprocess.run(crow_command(), env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True).stderr
        )


@pytest.mark.parametrize("problem", ["no model key", "store down"])
def test_a_setup_problem_is_one_line_with_status_3(crow_home, tmp_path, problem):
    env = crow_env(crow_home, "http://127.0.0.1:9/v1")
    if problem == "no model key":  # the default OpenAI endpoint, without a key
        env = {k: v for k, v in env.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    else:  # a closed port: nothing answers there
        env["CROW_DATABASE_URL"] = "postgresql://crow@127.0.0.1:9/crow"
    child = spawn(env, tmp_path, "chat")
    child.expect(pexpect.EOF)
    child.close()
    screen = child.before
    assert child.exitstatus == 3, screen
    assert screen.count("crow: ") == 1 and "Traceback" not in screen
    assert "session store does not answer" in screen if problem == "store down" else "OPENAI_API_KEY" in screen


def test_an_agent_that_refuses_or_never_ends_its_session_list_leaves_the_conversation_going(crow_home, tmp_path):
    agent = Path(__file__).parents[1] / "agents" / "chat_agent.py"
    with ScriptedModel([Reply(text="Still talking.")]) as model:
        child = spawn(crow_env(crow_home, model.base_url), tmp_path, "chat", "--agent", f"{agent}:build")
        started(child)
        say(child, "/sessions")
        child.expect(shown("crow: the session list is gone"))
        child.expect(PROMPT)
        say(child, "/sessions")  # a cursor that never ends: read up to a bound, then listed (nothing)
        child.expect("no stored sessions")
        child.expect(PROMPT)
        say(child, "hello")
        child.expect("Still talking.")
        status, screen = leave(child, tmp_path)
    assert status == 0, screen
    assert "Traceback" not in screen
