"""The curl and grpcurl examples of the README and of the docs pages that tour the API work as written (ports mapped
onto the test mesh)."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess

import pytest

pytestmark = pytest.mark.e2e

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Pages whose examples run as written against a fresh mesh, from the repository root (docs/evaluation.md's need a
# set of the reader's own and a run id, so they are not here).
PAGES = ("README.md", "docs/getting-started.md", "docs/audio-video.md", "docs/chat-api.md")
DEFAULT_PORTS = {"8080": "gateway", "50050": "orchestrator", "50051": "rag", "50052": "nlp", "50053": "graph"}


def readme_commands() -> list[str]:
    """Each example once, in the order a reader meets them."""
    blocks = [block for page in PAGES for block in re.findall(r"```sh\n(.*?)```", (ROOT / page).read_text(), flags=re.S)]
    lines = [line.strip() for block in blocks for line in block.splitlines()]
    return list(dict.fromkeys(line for line in lines if line.startswith(("curl ", ".venv/bin/grpcurl "))))


def _localise(command: str, mesh) -> str:
    def port(match: re.Match) -> str:
        name = DEFAULT_PORTS[match.group(1)]
        target = mesh.base_url.rsplit(":", 1)[1] if name == "gateway" else mesh.grpc_target(name).rsplit(":", 1)[1]
        return f"127.0.0.1:{target}"

    return re.sub(r"127\.0\.0\.1:(8080|5005[0-3])", port, command)


def test_readme_has_examples_for_every_service():
    commands = readme_commands()
    assert len(commands) >= 15
    for path in ("/v1/documents", "/v1/query", "/v1/nlp/", "/v1/graph/", "/v1/health", "/v1/supervisor/process"):
        assert any(path in c for c in commands), path


@pytest.mark.parametrize("command", readme_commands())
def test_readme_example_works(mesh, command):
    expected = re.search(r"#\s*(\d{3})\b", command)
    runnable = _localise(command.split("  #", 1)[0].strip(), mesh)
    if runnable.startswith("curl"):
        runnable += " -w '\\nHTTP %{http_code}\\n'"
    # The README's $TOKEN (`make run`'s token file) and $MESH_CREDENTIAL, from the test mesh.
    [(_, credential)] = mesh.grpc_metadata()
    env = {**os.environ, "TOKEN": mesh.token or "", "MESH_CREDENTIAL": credential}
    result = subprocess.run(["bash", "-c", runnable], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr + result.stdout[-2000:]
    if runnable.startswith("curl"):
        code = result.stdout.rstrip().rsplit("HTTP ", 1)[-1]
        if expected:
            assert code == expected.group(1), result.stdout[-2000:]
        else:
            assert code.startswith("2"), result.stdout[-2000:]
        assert '"error"' not in result.stdout or expected, result.stdout[-2000:]
