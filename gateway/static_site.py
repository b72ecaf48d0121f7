"""The web app's files as Envoy routes: one ``direct_response`` route per file under web/.

Envoy reads each file once, when it loads its configuration, and answers from memory: no extra
process to start, supervise or health-check, and the app shares the origin (and the port) of
``/v1/*``. The routes match exact paths (``/``, ``/app.js``, ``/vendor/pdf.min.mjs`` ...), so they
can never shadow a REST route; on them the transcoder and the token check are switched off (the
page must load before a token can be typed in; every ``/v1/*`` call it makes is still checked).
A changed file is served after the gateway restarts (the launcher renders the config at start).
"""

from __future__ import annotations

import pathlib

WEB_DIR = pathlib.Path(__file__).resolve().parents[1] / "web"
# Envoy's default limit for a direct response body is 4 KiB; pdf.js's worker is about 1 MiB.
MAX_FILE_BYTES = 16 * 1024 * 1024
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": "application/json",
    ".pfb": "application/octet-stream",
    ".ttf": "font/ttf",
    ".bcmap": "application/octet-stream",
}
# Served: the app's own files and what `make setup` copied into vendor/; never node_modules or package files.
_SKIP_DIRS = {"node_modules"}
_SKIP_FILES = {"package.json", "package-lock.json", "README.md"}


def site_files(root: pathlib.Path = WEB_DIR) -> dict[str, pathlib.Path]:
    """URL path -> file, for every servable file under ``root`` (``/`` is index.html)."""
    files: dict[str, pathlib.Path] = {}
    if not root.is_dir():
        return files
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if not path.is_file() or relative.parts[0] in _SKIP_DIRS or path.name in _SKIP_FILES:
            continue
        if path.suffix not in CONTENT_TYPES or path.stat().st_size > MAX_FILE_BYTES:
            continue
        files["/" + relative.as_posix()] = path
    if "/index.html" in files:
        files["/"] = files["/index.html"]
    return files


def routes(disabled_filters: list[str], root: pathlib.Path = WEB_DIR) -> list[dict]:
    """Exact-path routes answering with the files' bytes; ``disabled_filters`` are off on them."""
    off = {
        name: {"@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig", "disabled": True}
        for name in disabled_filters
    }
    out = []
    for url_path, path in site_files(root).items():
        headers = {
            "content-type": CONTENT_TYPES[path.suffix],
            "cache-control": "no-cache",
            "x-content-type-options": "nosniff",
        }
        route = {
            "name": f"web:{url_path}",
            "match": {"path": url_path, "headers": [{"name": ":method", "string_match": {"exact": "GET"}}]},
            "direct_response": {"status": 200, "body": {"filename": str(path)}},
            "response_headers_to_add": [
                {"header": {"key": k, "value": v}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}
                for k, v in headers.items()
            ],
        }
        if off:
            route["typed_per_filter_config"] = off
        out.append(route)
    return out
