"""crow chat's input history: newest first, private, bounded, and a damaged line is skipped, not fatal."""

from __future__ import annotations

from crow.chat.history import BoundedHistory


def test_the_history_is_bounded_private_and_survives_damage(tmp_path):
    path = tmp_path / "home" / "chat_history"
    history = BoundedHistory(path, limit=3)
    for entry in ["one", "two\nlines"]:
        history.store_string(entry)
    assert path.stat().st_mode & 0o777 == 0o600
    with path.open("a") as damaged:
        damaged.write("not json\n42\n")
    assert list(BoundedHistory(path, limit=3).load_history_strings()) == ["two\nlines", "one"]
    for entry in ["three", "four", "five", "six", "seven"]:
        history.store_string(entry)
    assert list(BoundedHistory(path, limit=3).load_history_strings()) == ["seven", "six", "five"]
    assert len(path.read_text().splitlines()) <= 2 * 3, "the file is cut back, not grown forever"
    assert path.stat().st_mode & 0o777 == 0o600


def test_a_history_that_cannot_be_written_is_no_error(tmp_path):
    (tmp_path / "file").write_text("")
    history = BoundedHistory(tmp_path / "file" / "chat_history")  # its directory is a file
    history.store_string("kept in memory only")
    assert list(history.load_history_strings()) == []


def test_a_pasted_model_key_is_not_kept(tmp_path, monkeypatch):
    from crow_acp.config import load_config
    from crow_acp.util.secrets import protect

    monkeypatch.setenv("OPENAI_API_KEY", "sk-chat-history-secret-0123456789")
    protect(load_config(tmp_path))  # what crow chat does before the conversation starts
    history = BoundedHistory(tmp_path / "chat_history")
    history.store_string("try with sk-chat-history-secret-0123456789 please")
    kept = (tmp_path / "chat_history").read_text()
    assert "sk-chat-history-secret" not in kept and "try with" in kept
