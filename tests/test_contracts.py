"""The contracts: lint-clean, generated code up to date, Envoy config valid."""

from __future__ import annotations

import filecmp
import pathlib
import subprocess
import sys

from gateway import envoy_config, rpc_routes
from services.launcher.mesh import envoy_binary
from services.runtime.config import MeshSettings

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = pathlib.Path(sys.executable).parent


def test_buf_lint_is_clean():
    result = subprocess.run([str(BIN / "buf"), "lint"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_generated_code_is_up_to_date(tmp_path):
    out, descriptor = tmp_path / "gen", tmp_path / "docuthinker.pb"
    subprocess.run(
        [sys.executable, "tools/protogen.py", "--out", str(out), "--descriptor", str(descriptor)],
        cwd=ROOT, check=True, timeout=120,
    )
    fresh = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    committed = sorted(
        p.relative_to(ROOT / "gen") for p in (ROOT / "gen").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    assert fresh == committed, "gen/ has extra or missing files: run `make proto`"
    stale = [str(p) for p in fresh if not filecmp.cmp(out / p, ROOT / "gen" / p, shallow=False)]
    assert not stale, f"stale generated files (run `make proto`): {stale}"
    assert descriptor.read_bytes() == (ROOT / "gateway" / "docuthinker.pb").read_bytes(), "stale descriptor set"


def test_every_public_rpc_has_an_http_rule_and_no_internal_one_is_routed():
    methods = rpc_routes.load_methods()
    assert set(methods) == {"rag", "nlp", "graph", "orchestrator"}
    from google.api import annotations_pb2
    from google.protobuf import descriptor_pb2

    fds = descriptor_pb2.FileDescriptorSet.FromString(rpc_routes.DESCRIPTOR_SET.read_bytes())
    internal = {m.grpc_path for ms in methods.values() for m in ms if m.internal}
    with_rule = {
        f"/{f.package}.{s.name}/{m.name}"
        for f in fds.file
        if f.package.startswith("docuthinker.")
        for s in f.service
        for m in s.method
        if m.options.HasExtension(annotations_pb2.http)
    }
    every = {m.grpc_path for ms in methods.values() for m in ms}
    # A public RPC's REST form may be its client-streaming "<name>Body" twin, to which the gateway streams a raw
    # body in pieces (UploadDocument's is UploadDocumentBody).
    by_twin = {path for path in every - with_rule if f"{path}Body" in with_rule}
    assert by_twin == {f"/docuthinker.rag.v1.RagService/{name}"
                       for name in ("UploadDocument", "IngestDocument", "SpokenQuery")}
    assert every - internal - by_twin == with_rule, "a public RPC needs an http rule; an internal one has none"
    assert internal == {"/docuthinker.graph.v1.GraphService/UpsertDocumentFacts",
                        "/docuthinker.graph.v1.GraphService/DeleteDocument"}
    hcm = envoy_config.render(MeshSettings())["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]
    routed = {r["name"] for r in hcm["typed_config"]["route_config"]["virtual_hosts"][0]["routes"]}
    assert not internal & routed and every - internal <= routed


def test_envoy_config_validates(tmp_path):
    config = envoy_config.write(tmp_path / "envoy.yaml", MeshSettings())
    result = subprocess.run(
        [envoy_binary(), "--mode", "validate", "-c", str(config), "--disable-hot-restart"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "OK" in result.stdout + result.stderr


def test_streams_are_unbounded_and_only_idempotent_unary_calls_retry():
    rendered = envoy_config.render(MeshSettings())
    hcm = rendered["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    routes = {r["name"]: r["route"] for r in hcm["route_config"]["virtual_hosts"][0]["routes"] if "route" in r}
    assert routes["/docuthinker.rag.v1.RagService/UploadDocument"]["timeout"] == "0s"
    assert routes["/docuthinker.rag.v1.RagService/UploadDocumentBody"]["timeout"] == "0s"
    assert routes["/docuthinker.nlp.v1.NlpService/Analyze"]["timeout"] == "0s"
    assert "retry_policy" in routes["/docuthinker.rag.v1.RagService/ListDocuments"]
    assert "retry_policy" not in routes["/docuthinker.rag.v1.RagService/DeleteDocument"]
    assert "retry_policy" not in routes["/docuthinker.rag.v1.RagService/UploadDocument"]
    assert set(rendered["admin"]["address"]) == {"pipe"}  # a unix socket, never a TCP port
