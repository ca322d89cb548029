"""The seccomp filter bwrap loads (`--seccomp FD`): no AF_UNIX socket inside the sandbox.

`--unshare-net` leaves filesystem sockets reachable: a docker.sock, an ssh or gpg agent, the user's
D-Bus, PostgreSQL's socket, anything listening below a readable path. The filter refuses
`socket(AF_UNIX, ...)` by its domain argument with EPERM, so nothing can connect to them;
`socketpair(AF_UNIX, ...)` stays allowed (it reaches nobody outside, and programs use it inside).
io_uring is refused too (its IORING_OP_SOCKET would go around the filter).

One rule does not need libseccomp: the classic-BPF program is written here with struct (pyseccomp
is unmaintained, and no binding on PyPI is worth the dependency for it). The program checks the
audit architecture first: a system call of another one (i386's int 0x80 on x86_64, whose socketcall
takes its domain in memory) is refused, as is every x32 system call number. On a machine that is not
x86_64 or aarch64 there is no filter, and `crow check` says what stays reachable.
"""

from __future__ import annotations

import os
import platform
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SOCKET = {"x86_64": 41, "aarch64": 198}
IO_URING_SETUP = 425  # the same number on both
X32_BIT = 0x40000000
AF_UNIX = 1
EPERM = 1

_LD_ABS_W, _JEQ, _JGE, _RET = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg0's low 32 bits: little-endian)


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine (or `machine`, as `uname -m` names it); None when crow has none for it."""
    machine = machine or platform.machine()
    if machine not in AUDIT_ARCH:
        return None
    deny = _op(_RET, _ERRNO | EPERM)
    ops = [
        _op(_LD_ABS_W, _ARCH),
        _op(_JEQ, AUDIT_ARCH[machine], 0, 7),  # another architecture: deny
        _op(_LD_ABS_W, _NR),
        _op(_JGE, X32_BIT, 5, 0),  # x32 numbers: deny
        _op(_JEQ, IO_URING_SETUP, 4, 0),
        _op(_JEQ, SOCKET[machine], 0, 2),  # not socket(): allow
        _op(_LD_ABS_W, _ARG0),
        _op(_JEQ, AF_UNIX, 1, 0),  # socket(AF_UNIX, ...): deny
        _op(_RET, _ALLOW),
        deny,
    ]
    return b"".join(ops)


def unavailable() -> str | None:
    """What stays reachable without the filter (crow check says it), or None when there is one here."""
    if program() is not None:
        return None
    return (
        f"no seccomp filter for {platform.machine()}: a unix socket in a readable path (outside /run, /tmp and "
        "$XDG_RUNTIME_DIR, which are private) can still be connected to"
    )


def pipe() -> int | None:
    """A descriptor to read the filter from (bwrap's --seccomp FD), or None without one; the caller closes it."""
    code = program()
    if code is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, code)  # far less than a pipe's buffer
    finally:
        os.close(write)
    return read


def escaped(machine: str) -> str:
    """The filter for `machine` as printf's %b writes it (`\\0ooo` per byte): for a shell on the editor's machine."""
    code = program(machine)
    assert code is not None
    return "".join(f"\\0{byte:03o}" for byte in code)


SHELL_LOADER = 'f=$(mktemp) || exit 125; printf %b "$1" > "$f" && exec 9< "$f"; rm -f "$f"; shift; exec "$@"'
"""`sh -c SHELL_LOADER crow-seccomp FILTER bwrap ... --seccomp 9 ...`: the filter on fd 9, then bwrap."""
