"""Generates the README's configuration table from the settings classes (the single source of truth).

    python tools/config_table.py           # print the table
    python tools/config_table.py --write   # replace the table between the README markers

A test fails when the README's table differs from what this prints, so the docs stay true.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import pathlib
import sys

from pydantic_settings import BaseSettings

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
START, END = "<!-- config-table:start -->", "<!-- config-table:end -->"
MODULES = [
    "services.runtime.config",
    "services.storage.settings",
    "services.providers.settings",
    "services.models.settings",
    "services.rag.settings",
    "services.rag.sources.settings",
    "services.rag.answers.settings",
    "services.rag.graph_sync.settings",
    "services.rag.crew.settings",
    "services.rag.analysis.settings",
    "services.speech.settings",
    "services.nlp.settings",
    "services.graph.settings",
    "services.orchestrator.settings",
    "services.launcher.settings",
    "gateway.auth",
    "gateway.edge_policy",
]


def _docstrings(cls: type) -> dict[str, str]:
    """Attribute docstrings: the string literal right after each annotated field."""
    tree = ast.parse(inspect.getsource(cls))
    node = tree.body[0]
    assert isinstance(node, ast.ClassDef)
    body = node.body
    docs: dict[str, str] = {}
    for node, following in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant):
                docs[node.target.id] = " ".join(str(following.value.value).split())
    return docs


def _default(field) -> str:
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "(unset)"
    if hasattr(value, "get_secret_value"):
        return "(secret)"
    text = str(value)
    return f"`{text}`" if text else '`""`'


def _env_name(field, default: str) -> str:
    alias = field.validation_alias
    if isinstance(alias, str):
        return alias
    choices = getattr(alias, "choices", None)
    if choices:
        return "` or `".join(str(c) for c in choices)
    return default


def settings_classes() -> list[type[BaseSettings]]:
    classes = []
    for name in MODULES:
        module = importlib.import_module(name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseSettings) and obj is not BaseSettings and obj.__module__ == module.__name__:
                classes.append(obj)
    return classes


def table() -> str:
    rows = ["| variable | default | meaning |", "| --- | --- | --- |"]
    seen: set[str] = set()
    for cls in settings_classes():
        prefix = cls.model_config.get("env_prefix", "")
        docs = _docstrings(cls)
        for name, field in cls.model_fields.items():
            env = _env_name(field, f"{prefix}{name}".upper())
            if env in seen:
                continue
            seen.add(env)
            meaning = docs.get(name) or field.description or ""
            rows.append(f"| `{env}` | {_default(field)} | {meaning.replace('|', '/')} |")
    return "\n".join(rows)


def readme_table(text: str) -> str:
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    generated = table()
    if not args.write:
        print(generated)
        return
    text = README.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{generated}\n{END}{tail}")
    print(f"updated {README}", file=sys.stderr)


if __name__ == "__main__":
    main()
