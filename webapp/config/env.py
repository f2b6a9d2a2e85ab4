"""One reader for the environment: typed, with safe local defaults, failing loudly on a bad value.

Every setting ClearFlow reads from the environment goes through these helpers, so that
`docker-compose.yml` and the tests can check that each variable is provided where it is needed.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

REPO_ROOT = Path(__file__).resolve().parents[2]


class EnvError(ImproperlyConfigured):
    pass


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise EnvError(f"{name} must be an integer, got {raw!r}") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise EnvError(f"{name} must be a number, got {raw!r}") from None


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise EnvError(f"{name} must be a boolean (true/false), got {raw!r}")


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def var_dir() -> Path:
    """Where local state lives (generated keys, ClickHouse data, logs, checkpoints)."""
    path = Path(env_str("CLEARFLOW_VAR_DIR", str(REPO_ROOT / "var")))
    path.mkdir(parents=True, exist_ok=True)
    return path


def env_secret(name: str, *, generate: Callable[[], str] | None = None) -> str:
    """A secret from the environment; locally, one generated once and kept under var/ (mode 0600).

    No literal secret ever appears in the settings. In production (docker-compose) the variable is set.
    """
    value = os.environ.get(name)
    if value:
        return value
    keyfile = var_dir() / "secrets" / name.lower()
    if keyfile.exists():
        return keyfile.read_text().strip()
    keyfile.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    value = generate() if generate else secrets.token_urlsafe(50)
    # O_EXCL: two processes starting at once must not end up with two different keys.
    try:
        fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return keyfile.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(value)
    return value
