"""The mesh credential stays out of Envoy's configuration and admin interface, yet reaches every upstream.

The real Envoy binary, rendered as the launcher renders it, with one plain-HTTP upstream (the chat API's cluster)
that records the headers it gets: the injected credential is there (a client's forged one overwritten), including
on Envoy's own ``httpCall`` (the strict-JSON check's), while the config file and every admin endpoint lack it, and
the admin interface is a unix socket of mode 0600, with no TCP port.
"""

from __future__ import annotations

import json
import os
import pathlib
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from gateway import envoy_config, http_apps, mesh_credentials, observability
from gateway.edge_policy import EdgeSettings
from gateway.request_validation import VALIDATE_PATH
from services.launcher.mesh import envoy_binary
from services.launcher.probes import EnvoyAdmin, free_port, healthy_clusters
from services.runtime import mesh_auth
from services.runtime.config import SERVICE_NAMES, MeshSettings

SECRET = "s3cret-Mesh-Credential-4711"
ADMIN_ENDPOINTS = ("/config_dump", "/config_dump?include_eds", "/clusters", "/clusters?format=json", "/listeners",
                   "/server_info", "/stats", "/stats?format=json", "/stats/prometheus", "/runtime", "/certs", "/memory",
                   "/init_dump", "/ready", "/hot_restart_version", "/help")


@pytest.fixture
def tmp_path():
    """A short directory: Envoy's admin socket lives under the data directory, and a unix socket's path must stay
    under ~100 characters, which pytest's per-session, per-test directories exceed."""
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="dt-gw-")
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


def _settings(tmp_path) -> MeshSettings:
    credential = tmp_path / "auth" / "mesh-credential"
    credential.parent.mkdir(parents=True, exist_ok=True)
    credential.write_text(SECRET)
    ports = {f"{name}_port": free_port() for name in (*SERVICE_NAMES, http_apps.OPENAI_API, "gateway")}
    return MeshSettings(**ports, data_dir=tmp_path / "data", mesh_credential_file=credential, gateway_stats_port=0)


def test_the_rendered_config_names_the_credential_file_only(tmp_path):
    settings = _settings(tmp_path)
    path = envoy_config.write(tmp_path / "envoy.yaml", settings)
    text = path.read_text()
    assert SECRET not in text
    config = envoy_config.render(settings)
    assert config["static_resources"]["secrets"] == [{"name": mesh_credentials.SECRET_NAME, "generic_secret": {
        "secret": {"filename": str(settings.mesh_credential_file.resolve())}}}]
    for cluster in config["static_resources"]["clusters"]:
        if cluster["name"] in (*SERVICE_NAMES, http_apps.OPENAI_API):
            options = cluster["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"]
            names = [f["name"] for f in options["http_filters"]]
            assert names == ["envoy.filters.http.credential_injector", "envoy.filters.http.upstream_codec"], cluster
    admin = config["admin"]["address"]
    assert "socket_address" not in admin and admin["pipe"]["mode"] == 0o600
    assert admin["pipe"]["path"] == str(settings.data_dir / "run" / "gateway-admin.sock")
    # No credential configured: nothing injected, nothing secret declared.
    open_mesh = envoy_config.render(settings.model_copy(update={"mesh_credential_file": None}))
    assert open_mesh["static_resources"]["secrets"] == []


def test_an_admin_socket_path_too_long_for_a_unix_socket_is_refused_with_the_setting_to_use(tmp_path):
    settings = MeshSettings(data_dir=tmp_path / ("d" * 120))
    with pytest.raises(ValueError, match="DOCUTHINKER_GATEWAY_ADMIN_SOCKET"):
        observability.admin_socket(settings)


class _Recorder(BaseHTTPRequestHandler):
    seen: list[dict[str, str]] = []

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path != http_apps.HEALTH_PATH:
            _Recorder.seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
        status = 204 if self.path == VALIDATE_PATH else 200
        body = b"" if status == 204 else b'{"object": "list", "data": []}'
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


@contextmanager
def _envoy_with_recorder(tmp_path) -> Iterator[tuple[MeshSettings, str]]:
    settings = _settings(tmp_path)
    recorder = ThreadingHTTPServer(("127.0.0.1", settings.openai_api_port), _Recorder)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    config = envoy_config.write(tmp_path / "envoy.yaml", settings, edge=EdgeSettings(client_rps=0, tenant_rps=0))
    proc = subprocess.Popen([envoy_binary(), "-c", str(config), "--disable-hot-restart", "--log-level", "error",
                             "--base-id", str(settings.gateway_port % 60000)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    admin = EnvoyAdmin(observability.admin_socket(settings))
    try:
        deadline = time.monotonic() + 60
        while http_apps.OPENAI_API not in healthy_clusters(admin):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the chat API's cluster never turned healthy"
            time.sleep(0.1)
        yield settings, f"http://127.0.0.1:{settings.gateway_port}"
    finally:
        proc.terminate()
        proc.wait(10)
        recorder.shutdown()


def test_every_upstream_request_carries_the_credential_and_no_admin_endpoint_shows_it(tmp_path):
    _Recorder.seen.clear()
    with _envoy_with_recorder(tmp_path) as (settings, base):
        forged = {mesh_auth.CREDENTIAL_HEADER: "forged-by-the-client"}
        assert httpx.get(f"{base}/v1/models", headers=forged, timeout=10).status_code == 200
        # A JSON route: the strict-JSON check's httpCall goes to the same cluster (then the transcoder finds no
        # healthy rag host: 503, which does not matter here).
        httpx.post(f"{base}/v1/search", json={"query": "x"}, timeout=10)
        admin = EnvoyAdmin(observability.admin_socket(settings))
        mode = os.stat(admin.socket_path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        dumps = {path: admin.get(path, timeout=10) for path in ADMIN_ENDPOINTS}
    paths = [seen["path"] for seen in _Recorder.seen]
    assert paths == ["/v1/models", VALIDATE_PATH], paths
    assert {seen[mesh_auth.CREDENTIAL_HEADER] for seen in _Recorder.seen} == {SECRET}
    assert all(reply.status_code == 200 for reply in dumps.values()), {p: r.status_code for p, r in dumps.items()}
    assert [path for path, reply in dumps.items() if SECRET in reply.text] == []
    assert '"[redacted]"' in dumps["/config_dump"].text  # the secret's file name too
    assert json.loads(dumps["/server_info"].text)["state"] == "LIVE"
