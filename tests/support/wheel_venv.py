"""crow as the registry installs it: the wheel built from a copy of the sources, installed alone into a new
virtual environment (its dependencies from the index), nothing of this checkout on its path. Used by
tests/house/test_wheel.py and benchmarks/launch.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("pyproject.toml", "README.md", "crow", "crow_acp", "crow_prompt", "crow_skills", "crow_compact")


def build_wheel(into: Path) -> Path:
    """The wheel, built from a copy (building in the checkout would leave build/ and egg-info in it)."""
    source = into / "source"
    source.mkdir(parents=True)
    for name in SHIPPED:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = into / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(dist), str(source)], check=True, timeout=600)
    (wheel,) = dist.glob("crow_agent-*.whl")
    return wheel


def tool_venv(into: Path) -> Path:
    """A new venv with only the wheel (and its dependencies) installed; its bin directory."""
    wheel = build_wheel(into)
    env_dir = into / "tool-venv"
    venv.create(env_dir, with_pip=True, symlinks=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install", str(wheel)], check=True, timeout=900
    )
    return env_dir / "bin"
