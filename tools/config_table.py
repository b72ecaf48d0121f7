"""Generates the configuration reference (docs/configuration.md) from the settings classes (the single source of truth).

    python tools/config_table.py           # print the reference
    python tools/config_table.py --write   # replace it between the markers in docs/configuration.md
    python tools/config_table.py --check   # exit 1 when docs/configuration.md differs (make docs runs this)

One section per settings class: its docstring, then a table of its variables, their defaults and the field
docstrings. ``tests/test_docs.py`` fails when the page differs from what this prints, so the docs stay true.
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
PAGE = ROOT / "docs" / "configuration.md"
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


def sections() -> list[tuple[type[BaseSettings], list[str]]]:
    """Each settings class with its table rows; a variable two classes read is listed under the first."""
    result = []
    seen: set[str] = set()
    for cls in settings_classes():
        prefix = cls.model_config.get("env_prefix", "")
        docs = _docstrings(cls)
        rows = []
        for name, field in cls.model_fields.items():
            env = _env_name(field, f"{prefix}{name}".upper())
            if env in seen:
                continue
            seen.add(env)
            meaning = docs.get(name) or field.description or ""
            rows.append(f"| `{env}` | {_default(field)} | {meaning.replace('|', '/')} |")
        if rows:
            result.append((cls, rows))
    return result


HEADER = ["| variable | default | meaning |", "| --- | --- | --- |"]


def table() -> str:
    """Every variable in one table."""
    return "\n".join(HEADER + [row for _, rows in sections() for row in rows])


def reference() -> str:
    """The reference as docs/configuration.md holds it: a section per settings class."""
    parts = []
    for cls, rows in sections():
        source = cls.__module__.replace(".", "/") + ".py"
        prefix = cls.model_config.get("env_prefix", "")
        own_doc = cls.__dict__.get("__doc__")
        intro = f"{' '.join(own_doc.split())} " if own_doc else ""
        parts.append(f"## {cls.__name__}\n\n{intro}(`{source}`; variables `{prefix}*`)\n\n" + "\n".join(HEADER + rows))
    return "\n\n".join(parts)


def page_reference(text: str) -> str:
    """What stands between the markers of docs/configuration.md."""
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true")
    action.add_argument("--check", action="store_true")
    args = parser.parse_args()
    generated = reference()
    if args.check:
        if page_reference(PAGE.read_text()) != generated:
            sys.exit(f"{PAGE.relative_to(ROOT)} is stale: run `python tools/config_table.py --write`")
        return
    if not args.write:
        print(generated)
        return
    text = PAGE.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    PAGE.write_text(f"{head}{START}\n{generated}\n{END}{tail}")
    print(f"updated {PAGE}", file=sys.stderr)


if __name__ == "__main__":
    main()
