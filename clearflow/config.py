"""Where the server is and which token to send: arguments, then CLEARFLOW_URL / CLEARFLOW_TOKEN, then the file
`clearflow login` writes (in the user's config directory, mode 0600, never the token in a command line)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from clearflow.errors import NotConfiguredError

ENV_URL = "CLEARFLOW_URL"
ENV_TOKEN = "CLEARFLOW_TOKEN"  # noqa: S105 - the variable's name
ENV_CONFIG = "CLEARFLOW_CONFIG"  # another file than the default one (e.g. one per environment)
DEFAULT_URL = "http://127.0.0.1:8000"  # what `make up` serves
API_PREFIX = "/api/v1"


@dataclass(frozen=True)
class Settings:
    url: str  # the web app's address, e.g. https://clearflow.example.com (the API is under /api/v1/)
    token: str

    def __repr__(self) -> str:  # the token never reaches a log or a traceback
        return f"Settings(url={self.url!r}, token='****')"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """$CLEARFLOW_CONFIG, else `clearflow/config.json` in the user's config directory (XDG, or %APPDATA%)."""
    env = os.environ if env is None else env
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]).expanduser()
    if sys.platform == "win32" and env.get("APPDATA"):
        base = Path(env["APPDATA"])
    else:
        base = Path(env.get("XDG_CONFIG_HOME") or Path(env.get("HOME") or Path.home()) / ".config")
    return base / "clearflow" / "config.json"


def normalize_url(url: str) -> str:
    """`host:8000`, `http://host:8000/` or `http://host:8000/api/v1/` -> `http://host:8000`."""
    url = url.strip().rstrip("/")
    if url.endswith(API_PREFIX):
        url = url[: -len(API_PREFIX)].rstrip("/")
    if "://" not in url:
        url = "http://" + url
    return url


def _stored(path: Path) -> dict[str, str]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise NotConfiguredError(f"cannot read {path}: {exc}. Run `clearflow login` again.") from None
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def load_settings(
    url: str | None = None, token: str | None = None, *, env: Mapping[str, str] | None = None
) -> Settings:
    """The settings to use; NotConfiguredError naming what is missing and how to give it."""
    env = os.environ if env is None else env
    stored = _stored(config_path(env)) if not (url or env.get(ENV_URL)) or not (token or env.get(ENV_TOKEN)) else {}
    url = url or env.get(ENV_URL) or stored.get("url")
    token = token or env.get(ENV_TOKEN) or stored.get("token")
    if not url or not token:
        missing = " and ".join(name for name, value in ((ENV_URL, url), (ENV_TOKEN, token)) if not value)
        raise NotConfiguredError(
            f"no ClearFlow server configured ({missing} not set): run `clearflow login`, or set {ENV_URL} and "
            f"{ENV_TOKEN} (an API token from the web app's API tokens page, /account/tokens/)."
        )
    return Settings(url=normalize_url(url), token=token.strip())


def save_settings(settings: Settings, *, env: Mapping[str, str] | None = None) -> Path:
    """Write the settings for later commands: the directory 0700, the file 0600 (written whole, then renamed)."""
    path = config_path(env)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".config-", dir=path.parent)  # created 0600
    try:
        with os.fdopen(handle, "w") as out:
            json.dump({"url": settings.url, "token": settings.token}, out, indent=2)
            out.write("\n")
        os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def remove_settings(*, env: Mapping[str, str] | None = None) -> Path | None:
    """Forget the stored settings; the path removed, or None when there was none."""
    path = config_path(env)
    try:
        path.unlink()
    except FileNotFoundError:
        return None
    return path
