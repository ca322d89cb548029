"""The stdio relay's line repair (crow_acp/mcp/relay.py), byte for byte: what the MCP SDK's parser
gets from a server whatever the server wrote, however the pipe split it."""

from __future__ import annotations

import json

import mcp_types
from hypothesis import given
from hypothesis import strategies as st

from crow_acp.mcp.relay import KEEP, LineRelay, StreamRepair, repair_escapes, repair_line


def relayed(data: bytes, *, cuts: list[int] = (), max_line: int = 1 << 20) -> list[bytes]:  # type: ignore[assignment]
    out: list[bytes] = []
    relay = LineRelay(out.append, max_line=max_line)
    start = 0
    for cut in sorted(set(cuts)):
        relay.feed(data[start:cut])
        start = cut
    relay.feed(data[start:])
    relay.close()
    return out


def parsed_text(line: bytes) -> str:
    message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    return message.result["text"]  # type: ignore[union-attr]


def answer(raw: bytes) -> bytes:
    return b'{"jsonrpc": "2.0", "id": 7, "result": {"text": "' + raw + b'"}}'


def test_lone_surrogate_escapes_become_replacement_characters_and_pairs_stay():
    line = repair_line(
        answer(rb"a\ud800b \udc00 \ud83d\ude00 \uD83D\uDE00 \\ud800 \\\ud800 \ud800\ud800\udc00 end\ud800")
    )
    assert parsed_text(line) == "a\ufffdb \ufffd \U0001f600 \U0001f600 \\ud800 \\\ufffd \ufffd\U00010000 end\ufffd"


def test_control_bytes_and_bad_utf8_are_made_valid():
    assert (
        parsed_text(repair_line(answer(b"nul \x00 esc \x1b bad \xff\xc0\x80 end")))
        == "nul \x00 esc \x1b bad \ufffd\ufffd\ufffd end"
    )


def test_a_valid_line_is_passed_as_it_is():
    line = answer("ünïcödé \\n \\\\u0041 \\ud83d\\ude00".encode())
    assert repair_line(line) == line


@given(st.lists(st.integers(min_value=0, max_value=400), max_size=20))
def test_lines_are_the_same_however_the_pipe_splits_them(cuts):
    data = answer(rb"x\ud800y") + b"\n\n" + answer("é😀".encode()) + b"\n" + answer(b"no newline at the end")
    assert relayed(data, cuts=cuts) == relayed(data)
    assert [parsed_text(line) for line in relayed(data)] == ["x\ufffdy", "é😀", "no newline at the end"]


def test_an_oversized_answer_becomes_an_error_for_its_id_and_memory_stays_bounded():
    big = b"z" * (4 * KEEP)
    head_id = answer(big)
    tail_id = b'{"result": {"text": "' + big + b'"}, "jsonrpc": "2.0", "id": "s-9"}'
    request = b'{"jsonrpc": "2.0", "id": 3, "method": "sampling/createMessage", "params": {"x": "' + big + b'"}}'
    out: list[bytes] = []
    relay = LineRelay(out.append, max_line=2 * KEEP)
    for line in (head_id, tail_id, request, b"[" + big + b"]", answer(b"small")):
        for start in range(0, len(line), 1000):
            relay.feed(line[start : start + 1000])
            assert sum(map(len, relay._parts)) <= 2 * KEEP  # never more than one line's allowance held
        relay.feed(b"\n")
    errors = [json.loads(line) for line in out[:2]]
    assert [e["id"] for e in errors] == [7, "s-9"]
    assert all("crow accepts at most" in e["error"]["message"] for e in errors)
    assert parsed_text(out[2]) == "small"  # the request and the garbage were dropped without a word
    assert len(out) == 3 and relay.dropped == 4


@given(st.lists(st.integers(min_value=0, max_value=120), max_size=30))
def test_a_streamed_body_is_repaired_the_same_however_it_is_cut(cuts):
    body = rb'{"a": "\ud83d\ude00\ud83d\ude00 \\\\\\ud800 \\\ud800 \ud800", "b": "\udc00\\ud83d\\ude00\ud83d"}'
    repair, out, start = StreamRepair(), [], 0
    for cut in sorted(set(cuts)):
        out.append(repair.feed(body[start:cut]))
        start = cut
    out.append(repair.feed(body[start:]))
    out.append(repair.flush())
    assert b"".join(out) == repair_escapes(body)
    assert json.loads(b"".join(out)) == {
        "a": "\U0001f600\U0001f600 \\\\\\ud800 \\\ufffd \ufffd",
        "b": "\ufffd\\ud83d\\ude00\ufffd",
    }


def test_an_oversized_line_in_one_piece_is_dropped_too():
    out: list[bytes] = []
    relay = LineRelay(out.append, max_line=KEEP)
    relay.feed(answer(b"y" * 3 * KEEP) + b"\n" + answer(b"next") + b"\n")
    assert json.loads(out[0])["id"] == 7 and "error" in json.loads(out[0])
    assert parsed_text(out[1]) == "next"
