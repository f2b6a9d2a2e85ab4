"""A connection document's `${ENV_VAR}` references: which variables a value names, the `env: [...]` list that
declares them, and the value with them replaced (`$$` is a `$`). Only secrets may read the environment
(`clearflow.documents` says why)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from clearflow.errors import ErrorItem

# ${VAR}, ${VAR:-default} (used when VAR is unset or empty), and $$ for a literal $.
_REFERENCE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The key of a connection document that declares the environment variables its secrets may read.
ENV_KEY = "env"


def references(value: str) -> list[str]:
    """The names of the variables `value` refers to (`${VAR}`, `${VAR:-default}`; `$$` is no reference)."""
    return [match.group(1) for match in _REFERENCE.finditer(value) if match.group(0) != "$$"]


def unescape(value: str) -> str:
    """`value` with `$$` read as `$` (a value that may not read the environment)."""
    return _REFERENCE.sub(lambda match: "$" if match.group(0) == "$$" else match.group(0), value)


def interpolate(value: str, env: Mapping[str, str]) -> tuple[str | None, list[str]]:
    """`value` with ${VAR} replaced: (text, []) or (None, the names of the variables that are not set)."""
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        if env.get(name):
            return env[name]
        if default is not None:
            return default.replace("$$", "$")
        missing.append(name)  # unset, or set to nothing (an empty secret by accident would clear the saved one)
        return ""

    text = _REFERENCE.sub(replace, value)
    return (None, missing) if missing else (text, [])


def declared_variables(given: Any, where: str, found: list[ErrorItem]) -> set[str]:
    """The variable names of a document's `env` list; an item that is not a variable's name is an error."""
    if not isinstance(given, list):
        found.append(ErrorItem(ENV_KEY, "a list of environment variable names: env: [CLICKHOUSE_PASSWORD]", where))
        return set()
    names = set()
    for item in given:
        if isinstance(item, str) and _VARIABLE_NAME.fullmatch(item):
            names.add(item)
        else:
            found.append(ErrorItem(ENV_KEY, f"{item!r} is not an environment variable's name", where))
    return names
