"""The provider fixture without a 3.12+ interpreter: it skips on a laptop and fails under
REQUIRE_SERVICES=1, so CI cannot pass the single sign-on tests by skipping them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support import oidc_provider


def test_candidates_that_do_not_run_or_are_too_old_are_passed_over(
    monkeypatch: Any, tmp_path: Path
) -> None:
    old = tmp_path / "python-old"
    old.write_text("#!/bin/sh\necho False\n")
    old.chmod(0o755)
    monkeypatch.setattr(
        oidc_provider, "interpreter_candidates", lambda: [str(tmp_path / "missing"), str(old)]
    )
    assert oidc_provider.interpreter_find() is None


@pytest.mark.parametrize(("required", "outcome"), [("", "skipped"), ("1", "failed")])
def test_no_interpreter_skips_or_fails(
    monkeypatch: Any, tmp_path: Path, required: str, outcome: str
) -> None:
    monkeypatch.setattr(oidc_provider, "interpreter_find", lambda: None)
    monkeypatch.setenv("REQUIRE_SERVICES", required)
    with pytest.raises(BaseException) as stopped:
        next(oidc_provider.running_provider(tmp_path))
    expected = pytest.skip.Exception if outcome == "skipped" else pytest.fail.Exception
    assert isinstance(stopped.value, expected)
    assert "no Python 3.12+ interpreter" in str(stopped.value)
