"""The documentation stays true: generated pages are current, every setting is documented, the README is a front door.

``make docs`` (run by ``make lint``, so by ``make test``) builds the site in strict mode; these tests hold what that
build cannot see: that the generated pages match their sources, and what the README must keep.
"""

from __future__ import annotations

import importlib.util
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
README_LIMIT_BYTES = 15 * 1024


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_configuration_page_is_current():
    tool = _tool("config_table")
    assert tool.page_reference((ROOT / "docs" / "configuration.md").read_text()) == tool.reference(), (
        "docs/configuration.md is stale: run `python tools/config_table.py --write`"
    )


def test_every_setting_is_documented():
    tool = _tool("config_table")
    undocumented = [line for line in tool.table().splitlines()[2:] if line.rstrip().endswith("|  |")]
    assert not undocumented, undocumented


# Read by the launcher's command line as its flags' defaults, and documented there (``--help``).
_COMMAND_LINE_DEFAULTS = {"DOCUTHINKER_PROMETHEUS", "DOCUTHINKER_PORT_OFFSET"}


def test_every_variable_the_services_read_is_a_documented_setting():
    tool = _tool("config_table")
    documented = set(re.findall(r"^\| `(DOCUTHINKER_[A-Z0-9_]+)`", tool.table(), re.MULTILINE))
    read = {name for folder in ("services", "gateway") for path in (ROOT / folder).rglob("*.py")
            for name in re.findall(r"(?:environ\.get\(|environ\[|getenv\()\s*\"(DOCUTHINKER_[A-Z0-9_]+)\"",
                                   path.read_text())}
    assert read - documented - _COMMAND_LINE_DEFAULTS == set()
    assert "DOCUTHINKER_DEVICE" in documented  # once read by the embedder and speech, and in no table


def test_api_reference_is_current():
    tool = _tool("api_reference")
    assert (ROOT / "docs" / "api.md").read_text() == tool.render(), (
        "docs/api.md is stale: run `python tools/api_reference.py --write`"
    )


def test_api_reference_lists_every_rpc_and_route():
    from google.protobuf import descriptor_pb2

    from gateway.rpc_routes import DESCRIPTOR_SET
    from services.runtime.contracts import http_rules_of, methods_of

    fds = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTOR_SET.read_bytes())
    page = (ROOT / "docs" / "api.md").read_text()
    for method in methods_of(fds.file):
        assert f"`{method.grpc_path}`" in page, method.grpc_path
    for rule in http_rules_of(fds.file):
        assert f"`{rule.verb.upper()} {rule.template}`" in page, rule.template


def test_readme_is_a_front_door():
    readme = (ROOT / "README.md").read_bytes()
    assert len(readme) <= README_LIMIT_BYTES, f"README.md is {len(readme)} bytes; move detail into docs/"
    text = readme.decode()
    # The two commands are exactly what CI runs: `.ci/run` is `make setup` then `make test`.
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^make setup\nmake test$", ci, flags=re.M)
    assert re.search(r"^make setup run\s", text, flags=re.M) and re.search(r"^make test\s", text, flags=re.M)
    for page in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / page).exists(), page
