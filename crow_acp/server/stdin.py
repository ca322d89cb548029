"""stdin as a pipe the event loop can watch, whatever the user gave crow.

asyncio watches pipes, sockets and terminals. stdin from a regular file (`crow acp < requests.jsonl`) or
/dev/null is neither (epoll refuses both): crow waited forever on a reader it could never register. Such
an fd is relayed through a pipe by a thread that copies it with blocking reads; its end (EOF) ends the
pipe, so crow sees it as an editor closing stdin. stdout has no such relay (what a thread still held at
exit would be lost): a stdout crow cannot watch is a clear error instead (crow/cli.py).
"""

from __future__ import annotations

import os
import stat
import threading


def watchable(fd: int) -> bool:
    """A pipe, a socket or a terminal; False for a file, /dev/null or a closed fd."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:  # EBADF: the fd was closed (`crow acp >&-`)
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def readable_stdin() -> int:
    """fd 0 itself when the event loop can watch it; otherwise the read end of a pipe a thread fills from it."""
    if watchable(0):
        return 0
    read_end, write_end = os.pipe()
    threading.Thread(target=_copy, args=(0, write_end), daemon=True, name="crow-stdin-relay").start()
    return read_end


def _copy(source: int, target: int) -> None:
    try:
        while chunk := os.read(source, 1 << 16):
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view) :]
    except OSError:
        pass  # crow closed its end (it is exiting): nothing is left to relay to
    finally:
        os.close(target)
