"""The crow files one session/prompt passes through, from AcpAgent.prompt to the answer.

usage: python benchmarks/prompt_path.py [--list]

Builds an AcpAgent on a FunctionModel (the model's reply is scripted; nothing else is), connects a
client that takes session/update in process, opens a session and sends one warm-up prompt (so
first-use imports and the title request are not counted). Then it sends one more prompt under
sys.setprofile and collects the file of every crow function called on the way, until the
PromptResponse comes back. Prints `PROMPT_PATH: files=N acp=N core=N core_to_acp_calls=N` (with --list, the files and
those calls: the callbacks acp/ hands core, which climb back up the layers at run time).
"""

from __future__ import annotations

import asyncio
import pathlib
import sys
import tempfile
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("crow_acp", "crow", "crow_prompt", "crow_skills", "crow_compact")
CLIMBS: set[str] = set()
"""Calls from a core/ function straight into an acp/ one (a callback the layer above handed core)."""


class Editor:
    """The editor's side, in process: takes every session/update, answers no permission."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, *_: Any, **__: Any) -> Any:
        raise RuntimeError("no permission is asked on this path")


def crow_file(filename: str) -> str | None:
    path = pathlib.Path(filename)
    try:
        relative = path.resolve().relative_to(ROOT)
    except ValueError:
        return None
    return str(relative) if relative.parts[0] in PACKAGES else None


async def measure() -> set[str]:
    from crow_acp import AcpAgent, FunctionModel
    from crow_acp.testing import Reply

    with tempfile.TemporaryDirectory() as home:
        import os

        os.environ["CROW_HOME"] = home
        os.environ.setdefault("OPENAI_API_KEY", "benchmark")
        model = FunctionModel(default=Reply(text="the answer"))
        agent = AcpAgent(model)
        agent.on_connect(Editor())
        session = await agent.new_session(cwd=home, mcp_servers=[])
        text = [{"type": "text", "text": "warm up"}]
        await agent.prompt(prompt=text, session_id=session.session_id)
        await asyncio.sleep(0.05)  # let the warm-up's background work (title) end
        seen: set[str] = set()

        def profile(frame: Any, event: str, _arg: Any) -> None:
            if event == "call":
                name = crow_file(frame.f_code.co_filename)
                if name is not None:
                    seen.add(name)
                    caller = crow_file(frame.f_back.f_code.co_filename) if frame.f_back else None
                    if caller and caller.startswith("crow_acp/core/") and name.startswith("crow_acp/acp/"):
                        CLIMBS.add(f"{caller} -> {name}:{frame.f_code.co_name}")

        sys.setprofile(profile)
        try:
            await agent.prompt(prompt=[{"type": "text", "text": "one prompt"}], session_id=session.session_id)
        finally:
            sys.setprofile(None)
        await agent.shutdown()
    return seen


def main() -> None:
    files = asyncio.run(measure())
    if "--list" in sys.argv:
        for name in sorted(files):
            print(name)
        for climb in sorted(CLIMBS):
            print("climb:", climb)
    acp = sum(1 for f in files if f.startswith("crow_acp/acp/"))
    core = sum(1 for f in files if f.startswith("crow_acp/core/"))
    print(f"PROMPT_PATH: files={len(files)} acp={acp} core={core} core_to_acp_calls={len(CLIMBS)}")


if __name__ == "__main__":
    main()
