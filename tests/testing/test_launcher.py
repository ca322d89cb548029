"""launch.py stands in for a process the fork server forked: what a parent sees of it is what it would
see of the same process exec'd (exit status, signals, stdio, environment), and killing it kills both."""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import spawn

pytestmark = pytest.mark.skipif(spawn.EXEC_ALL, reason="CROW_TEST_EXEC=1: nothing is forked")

PROBE = """
import json, os, signal, sys
what = sys.argv[1]
if what == "report":
    seen = {"argv": sys.argv[1:], "cwd": os.getcwd(), "path0": sys.path[0], "name": __name__,
            "env": {k: v for k, v in os.environ.items() if k.startswith("PROBE_")},
            "sigint_ignored": signal.getsignal(signal.SIGINT) == signal.SIG_IGN,
            "stdin": sys.stdin.read(), "ppid": os.getppid(), "pid": os.getpid()}
    print(json.dumps(seen), flush=True)
    print("to stderr", file=sys.stderr)
    sys.exit(int(os.environ.get("PROBE_STATUS", "0")))
if what == "wait":
    # Held until sigwait takes it: with a handler and pause(), a signal that came between the pid file
    # and pause() ran no handler, and pause() then waited for ever (CI, under load).
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    open(sys.argv[2], "w").write(str(os.getpid()))
    signal.sigwait([signal.SIGUSR1])
    sys.exit(7)
if what == "die":
    os.kill(os.getpid(), signal.SIGTERM)
"""


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    return path


def run(command: list[str], probe: Path, **kwargs) -> tuple[subprocess.CompletedProcess, dict]:
    env = {"PATH": os.environ["PATH"], "PROBE_A": "1", "PROBE_STATUS": "3"}
    done = subprocess.run(
        [*command, str(probe), "report", "x"],
        input="in",
        capture_output=True,
        text=True,
        env=env,
        cwd=probe.parent,
        timeout=60,
        **kwargs,
    )
    return done, json.loads(done.stdout)


def test_a_forked_script_sees_and_returns_what_an_execd_one_does(probe: Path):
    forked, seen_forked = run([spawn.python()], probe)
    execd, seen_execd = run([sys.executable], probe)
    assert seen_forked.pop("ppid") != os.getpid(), "forked: the fork server is its parent"
    assert seen_execd.pop("ppid") == os.getpid()
    assert forked.returncode == execd.returncode == 3
    assert forked.stderr == execd.stderr == "to stderr\n"
    seen_forked.pop("pid"), seen_execd.pop("pid")
    assert seen_forked == seen_execd
    assert seen_forked["env"] == {"PROBE_A": "1", "PROBE_STATUS": "3"} and seen_forked["stdin"] == "in"


def test_it_is_forked_and_an_ignored_signal_stays_ignored(probe: Path):
    ignore = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731 (as a background job's shell does)
    launcher = subprocess.Popen(
        [spawn.python(), str(probe), "report"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=ignore,
    )
    seen = json.loads(launcher.communicate(timeout=60)[0])
    assert seen["ppid"] != launcher.pid, "the fork server is its parent, not the launcher"
    assert seen["sigint_ignored"]


def test_signals_reach_it_and_its_status_comes_back(probe: Path, tmp_path: Path):
    pidfile = tmp_path / "pid"
    launcher = subprocess.Popen([spawn.python(), str(probe), "wait", str(pidfile)])
    forked = wait_for_pid(pidfile)
    assert forked != launcher.pid
    launcher.send_signal(signal.SIGUSR1)
    assert launcher.wait(timeout=60) == 7
    died = subprocess.run([spawn.python(), str(probe), "die"], timeout=60)
    assert died.returncode == -signal.SIGTERM


def test_killing_the_launcher_kills_the_forked_process(probe: Path, tmp_path: Path):
    pidfile = tmp_path / "pid"
    launcher = subprocess.Popen([spawn.python(), str(probe), "wait", str(pidfile)])
    forked = wait_for_pid(pidfile)
    launcher.kill()
    launcher.wait(timeout=60)
    deadline = time.monotonic() + 60
    while Path(f"/proc/{forked}").exists() and _state(forked) != "Z":
        assert time.monotonic() < deadline, "the forked process outlived its launcher"
        time.sleep(0.05)


def test_what_it_cannot_fork_is_execd(probe: Path):
    execd, seen = run([spawn.python(), "-S"], probe)  # an interpreter option: only a real interpreter has it
    assert execd.returncode == 3 and seen["argv"] == ["report", "x"]
    assert seen["ppid"] == os.getpid(), "exec'd: the launcher became the interpreter"


def test_code_given_with_c_is_forked_too():
    code = "import os, sys; print(os.getppid(), sys.argv, __name__, repr(sys.path[0])); sys.exit(5)"
    launched = subprocess.run([spawn.python(), "-c", code, "a"], capture_output=True, text=True, timeout=60)
    ppid, rest = launched.stdout.split(" ", 1)
    assert launched.returncode == 5 and int(ppid) != os.getpid()
    assert rest == "['-c', 'a'] __main__ ''\n"


def test_requesters_that_die_mid_request_leave_the_server_serving(probe: Path, tmp_path: Path):
    """A requester gone before the server answers (a test killed it): its child is killed, the server lives on."""
    devnull = os.open(os.devnull, os.O_RDWR)
    pidfiles = [tmp_path / f"pid{n}" for n in range(20)]
    try:
        for pidfile in pidfiles:
            request = {"args": [str(probe), "wait", str(pidfile)], "env": dict(os.environ), "cwd": str(tmp_path)}
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
                sock.connect(spawn.socket_path())
                sock.sendmsg(
                    [json.dumps(request).encode()],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [devnull] * 3))],
                )
    finally:
        os.close(devnull)
    done, seen = run([spawn.python()], probe)
    assert done.returncode == 3 and seen["ppid"] != os.getpid(), "the server still forks"
    deadline = time.monotonic() + 60
    for pidfile in pidfiles:
        while pidfile.exists() and pidfile.read_text() and _state(int(pidfile.read_text())) not in ("Z", "gone"):
            assert time.monotonic() < deadline, "a child outlived the requester that asked for it"
            time.sleep(0.05)


def test_a_malformed_request_is_told_to_exec_and_the_server_serves_on(probe: Path):
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        for garbage in (b"not json", b"{}", b'{"args": [], "env": {}, "cwd": "/"}', b"\xff" * 1000):
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as sock:
                sock.connect(spawn.socket_path())
                sock.sendmsg([garbage], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [devnull] * 3))])
                assert json.loads(sock.recv(4096)) == {"exec": True}, garbage
    finally:
        os.close(devnull)
    done, seen = run([spawn.python()], probe)
    assert done.returncode == 3 and seen["ppid"] != os.getpid(), "the server still forks"


def wait_for_pid(pidfile: Path) -> int:
    deadline = time.monotonic() + 60
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline, "the probe never started"
        time.sleep(0.02)
    return int(pidfile.read_text())


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"
