"""`crow acp` hosted in this process, as `crow run` hosts it: the same in-memory pair, crow's wire on both ends.

`hosted_crow` takes what `helpers.run_crow` takes and yields an initialized connection, without a
process: for tests where the process is not the point (no signals, no pid, no stderr, no crow.log, no
second crow). The environment and working directory are the test's while crow runs, as they would be
the child's; tests in one worker run one at a time, so this process's os.environ is free to take them.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, cast

from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, Implementation
from acp.transports import default_environment

from crow.agent_loader import load_agent
from crow_acp.config import load_config
from crow_acp.server.hosted import hosted


@contextmanager
def environment(env: dict[str, str], cwd: str | None) -> Iterator[None]:
    saved, here = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(saved)


def _options(args: tuple[str, ...]) -> tuple[str | None, str | None]:
    """--agent and --model, the only `crow acp` arguments the hosted tests use."""
    values = dict(zip(args[::2], args[1::2], strict=True))
    unknown = set(values) - {"--agent", "--model"}
    assert not unknown, f"hosted_crow does not take {unknown}; use run_crow"
    return values.get("--agent"), values.get("--model")


@asynccontextmanager
async def hosted_crow(
    client: Any,
    env: dict[str, str],
    *args: str,
    cwd: str | None = None,
    capabilities: ClientCapabilities | None = None,
) -> AsyncIterator[tuple[Any, None]]:
    """`crow acp ARGS` in this process, initialized; yields (connection, None) where run_crow yields a process."""
    spec, model = _options(args)
    with environment(default_environment() | env, cwd):
        agent = load_agent(spec, load_config(model=model))
        async with hosted(agent) as served:
            conn = ClientSideConnection(cast(Any, client), served.wire, use_unstable_protocol=True)
            try:
                await conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=capabilities or ClientCapabilities(),
                    client_info=Implementation(name="crow-tests", version="0"),
                )
                yield conn, None
            finally:
                await conn.close()
