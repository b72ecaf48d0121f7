"""MkDocs hooks (mkdocs.yml ``hooks:``): what the site takes from the tree at build time, so nothing is copied by hand.

- Every component README (``services/**/README.md``, ``deploy/``, ``bench/``, ``docuthinker_cli/``, ``web/``) becomes a
  page under ``components/`` (``services/rag/README.md`` → ``components/services/rag.md``) and an entry of the
  navigation's "Components" section, named by its folder. A README that moves moves its page with it.
- ``<!-- readme-intro -->`` in a page becomes the README's introduction (between its title and its first section),
  so the site's home page and the README's say the same thing from one text (links into ``docs/`` adjusted).
- ``<!-- import-map -->`` in a page becomes the table of which top-level package imports which, read from the
  sources' import statements at build time (architecture.md).

Nothing here reaches the network.
"""

from __future__ import annotations

import ast
import collections
import pathlib
import re

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = pathlib.Path(__file__).resolve().parent.parent
COMPONENT_ROOTS = ("services", "gateway", "deploy", "bench", "docuthinker_cli", "web")
SKIP_PARTS = {"node_modules", "vendor", "results", "__pycache__"}
IMPORT_MAP = "<!-- import-map -->"
README_INTRO = "<!-- readme-intro -->"
IMPORT_ROOTS = ("services", "gateway", "docuthinker_cli")


def component_readmes() -> dict[str, pathlib.Path]:
    """Page path (under the docs) → README, in a stable order."""
    pages = {}
    for top in COMPONENT_ROOTS:
        for readme in sorted((ROOT / top).rglob("README.md")):
            relative = readme.relative_to(ROOT)
            if SKIP_PARTS.isdisjoint(relative.parts):
                pages[f"components/{relative.parent.as_posix()}.md"] = readme
    return pages


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    pages = component_readmes()
    config.nav = [*(config.nav or []),
                  {"Components": [{readme.parent.relative_to(ROOT).as_posix(): page} for page, readme in pages.items()]}]
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for page, readme in component_readmes().items():
        source = readme.relative_to(ROOT).as_posix()
        note = f"\n\n*This page is `{source}`, included when the site is built.*\n"
        text = readme.read_text()
        heading = re.search(r"^#\s+.+$", text, flags=re.M)
        cut = heading.end() if heading else 0
        files.append(File.generated(config, page, content=text[:cut] + note + text[cut:]))
    return files


def _package(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] == "services" and len(parts) > 1:
        return f"services.{parts[1]}"
    if parts[0] in ("gateway", "docuthinker_cli"):
        return parts[0]
    if parts[0] == "docuthinker":
        return "gen (docuthinker.*)"
    return None


def import_map() -> str:
    """One row per top-level package: the packages of this tree its modules import (relative imports stay inside)."""
    edges: dict[str, set[str]] = collections.defaultdict(set)
    for top in IMPORT_ROOTS:
        for path in (ROOT / top).rglob("*.py"):
            source = _package(".".join(path.relative_to(ROOT).with_suffix("").parts))
            if source is None:
                continue
            edges.setdefault(source, set())
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    target = _package(name)
                    if target is not None and target != source:
                        edges[source].add(target)
    rows = ["| package | imports |", "| --- | --- |"]
    for source in sorted(edges):
        rows.append(f"| `{source}` | {', '.join(f'`{t}`' for t in sorted(edges[source])) or '(none of ours)'} |")
    return "\n".join(rows)


def readme_intro() -> str:
    text = (ROOT / "README.md").read_text()
    title = re.search(r"^#\s+.+$", text, flags=re.M)
    body = text[title.end() if title else 0:]
    section = re.search(r"^##\s", body, flags=re.M)
    return body[: section.start() if section else len(body)].strip().replace("](docs/", "](")


def on_page_markdown(markdown: str, page, config: MkDocsConfig, files: Files) -> str:
    if README_INTRO in markdown:
        markdown = markdown.replace(README_INTRO, readme_intro())
    if IMPORT_MAP in markdown:
        markdown = markdown.replace(IMPORT_MAP, import_map())
    return markdown
