"""The LLM clients' virtualenv refuses litellm 1.107.0 (a compromised release): in the pinned
requirements, unpinned, and installed in a virtualenv it is pointed at."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.llm_clients import (
    REQUIREMENTS,
    RefusedRelease,
    installed_check,
    requirements_check,
)


def test_the_shipped_requirements_pass_and_pin_litellm_exactly() -> None:
    text = REQUIREMENTS.read_text()
    requirements_check(text)
    assert "litellm[proxy]==1.106.12" in text.splitlines()


@pytest.mark.parametrize(
    "line",
    [
        "litellm==1.107.0",
        "litellm[proxy]==1.107.0",
        "LiteLLM[proxy] == 1.107.0  # a comment",
        "litellm[proxy]>=1.106",
        "litellm",
    ],
)
def test_a_refused_or_unpinned_litellm_is_refused(line: str) -> None:
    with pytest.raises(RefusedRelease, match="litellm"):
        requirements_check(f"openai==2.54.0\n{line}\n")


def test_other_packages_are_not_judged() -> None:
    requirements_check("# litellm==1.107.0 in a comment\nlitellm-proxy-extras>=0.4\nopenai\n")


def _venv_with_litellm(root: Path, version: str) -> Path:
    """A virtualenv whose metadata says litellm ``version`` is installed (no code)."""
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    [site] = list(venv.glob("lib/python3*/site-packages"))
    info = site / f"litellm-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: litellm\nVersion: {version}\n")
    return venv


def test_a_virtualenv_holding_1_107_0_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RefusedRelease, match="litellm 1.107.0"):
        installed_check(_venv_with_litellm(tmp_path, "1.107.0"))


def test_a_virtualenv_holding_1_106_12_is_taken(tmp_path: Path) -> None:
    assert installed_check(_venv_with_litellm(tmp_path, "1.106.12")) == {"litellm": "1.106.12"}
