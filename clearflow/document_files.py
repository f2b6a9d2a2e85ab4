"""Reading pipeline files: YAML (one or more documents, `---`) or JSON (one document or a list), from files,
directories and standard input, each document with where it was found."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import yaml

from clearflow.errors import DocumentError, ErrorItem

FILE_SUFFIXES = (".yaml", ".yml", ".json")


class _Loader(yaml.SafeLoader):
    """YAML without surprises for a config file: a key given twice is an error, and dates stay text."""


def _mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen and key != "<<":
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} is given twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class RawDocument:
    where: str  # "pipelines/signups.yaml" or "pipelines/all.yaml, document 2"
    data: Any


def _parse_text(text: str, name: str) -> list[RawDocument]:
    if name.endswith(".json"):
        try:
            loaded = [json.loads(text)]
        except json.JSONDecodeError as exc:
            raise DocumentError(
                f"{name} is not valid JSON", errors=[ErrorItem("", f"line {exc.lineno}, column {exc.colno}: {exc.msg}")]
            ) from None
    else:
        try:
            loaded = [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise DocumentError(f"{name} is not valid YAML", errors=[ErrorItem("", f"{at}{problem}")]) from None
    flat: list[Any] = []
    for doc in loaded:
        flat.extend(doc if isinstance(doc, list) else [doc])  # a JSON array of documents
    if len(flat) == 1:
        return [RawDocument(name, flat[0])]
    return [RawDocument(f"{name}, document {i}", doc) for i, doc in enumerate(flat, 1)]


def read_documents(paths: Sequence[str], *, stdin: TextIO | None = None) -> list[RawDocument]:
    """The documents of files, directories (their .yaml/.yml/.json files, by name) and `-` (standard input)."""
    documents: list[RawDocument] = []
    for given in paths:
        if given == "-":
            documents += _parse_text((stdin or sys.stdin).read(), "<stdin>")
            continue
        path = Path(given)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in FILE_SUFFIXES and p.is_file())
            if not files:
                raise DocumentError(f"{given}: no {', '.join(FILE_SUFFIXES)} files in this directory")
        elif path.is_file():
            files = [path]
        else:
            raise DocumentError(f"{given}: no such file or directory")
        for file in files:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise DocumentError(f"cannot read {file}: {exc}") from None
            documents += _parse_text(text, str(file))
    if not documents:
        raise DocumentError("no documents to apply: the files are empty")
    return documents
