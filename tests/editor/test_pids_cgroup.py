"""Which pids cgroup a sandboxed command gets (issue 22): cgroup v2 where crow's own cgroup is a delegated
subtree with the pids controller, else v1 as root, else none (the rlimit alone).

This machine (a hybrid host: v1 hierarchies and a unified one without the pids controller) can run
v1 for real only, so v2 is checked on a tree laid out as the kernel lays it out, and the fallback
on the real one.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crow_acp.editor import pids_cgroup

OWN = "/user.slice/user-1000.slice/user@1000.service/app.slice/crow.scope"


def delegated(tmp_path: Path, controllers: str = "cpu memory pids", procs: list[int] | None = None) -> Path:
    """A unified hierarchy at tmp_path/cg whose crow.scope holds `procs` (crow alone by default)."""
    here = tmp_path / "cg" / OWN.lstrip("/")
    here.mkdir(parents=True)
    (here / "cgroup.controllers").write_text(f"{controllers}\n")
    (here / "cgroup.subtree_control").write_text("\n")
    (here / "cgroup.procs").write_text("".join(f"{pid}\n" for pid in procs or [os.getpid()]))
    return here


def test_v2_moves_crow_into_a_leaf_enables_pids_and_limits_each_command(tmp_path, monkeypatch):
    here = delegated(tmp_path)
    assert pids_cgroup.v2_base((str(tmp_path / "absent"), str(tmp_path / "cg")), OWN) == str(here)
    assert (here / "crow" / "cgroup.procs").read_text() == str(os.getpid())  # crow left its cgroup first
    assert (here / "cgroup.subtree_control").read_text() == "+pids"  # then its children got the controller

    monkeypatch.setattr(pids_cgroup, "_v2_base", [str(here)])
    group = pids_cgroup.create(40)
    assert group is not None and Path(group).parent == here  # a sibling of crow's leaf
    assert (Path(group) / "pids.max").read_text() == "40"


@pytest.mark.parametrize(
    ("controllers", "procs"),
    [("cpu memory", None), ("cpu memory pids", [os.getpid(), 1])],
    ids=["no pids controller", "another process in crow's cgroup"],
)
def test_v2_is_left_alone_where_crow_may_not_use_it(tmp_path, controllers, procs):
    here = delegated(tmp_path, controllers, procs)
    assert pids_cgroup.v2_base((str(tmp_path / "cg"),), OWN) is None
    assert not (here / "crow").exists() and (here / "cgroup.subtree_control").read_text() == "\n"


def test_this_machine_falls_back_to_v1_as_root(monkeypatch):
    monkeypatch.setattr(pids_cgroup, "_v2_base", [])
    own = pids_cgroup._own_v2_path()
    if pids_cgroup.v2_base(pids_cgroup.V2_MOUNTS, own) is not None:
        pytest.skip("this machine offers cgroup-v2 pids limits")
    if os.geteuid() != 0 or not os.access(os.path.join(pids_cgroup.HIERARCHY, "cgroup.procs"), os.W_OK):
        assert pids_cgroup.create(40) is None  # the rlimit alone
        return
    group = pids_cgroup.create(40)
    try:
        assert group is not None and group.startswith(pids_cgroup.HIERARCHY + "/")
        assert Path(group, "pids.max").read_text().strip() == "40"
    finally:
        if group:
            pids_cgroup.remove(group)
    assert not os.path.exists(group)
