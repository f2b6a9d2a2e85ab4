"""The banner of `make up` shows the admin password on a terminal only, never in a file such as var/log/up.log."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from localstack.up import login_words

pytestmark = pytest.mark.fast


@pytest.fixture
def var_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ADMIN_PASSWORD", raising=False)
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    fd = os.open(secrets / "admin_password", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("pw-Zq81-secret\n")
    return tmp_path


def test_a_banner_written_to_a_file_names_the_password_file_not_the_password(var_dir: Path) -> None:
    words = login_words(var_dir, to_terminal=False)
    assert "pw-Zq81-secret" not in words
    assert str(var_dir / "secrets" / "admin_password") in words
    assert stat.S_IMODE((var_dir / "secrets" / "admin_password").stat().st_mode) == 0o600


def test_a_banner_on_a_terminal_shows_the_password(var_dir: Path) -> None:
    assert login_words(var_dir, to_terminal=True) == "admin / pw-Zq81-secret"
