#!/usr/bin/env bash
# The web app's front-end libraries: installed from the npm registry (exact versions of
# web/package-lock.json), then the few browser files it loads copied into web/vendor/, which
# Envoy serves at /vendor/ (gateway/static_site.py). No bundler, no CDN.
set -euo pipefail
cd "$(dirname "$0")/../web"
if ! command -v npm >/dev/null; then
  echo "error: npm is missing: install Node.js 20+ and npm, then run make setup again (the web app needs its libraries)." >&2
  exit 1
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --omit=optional --no-audit --no-fund --loglevel=error
fi
mkdir -p vendor
cp node_modules/pdfjs-dist/build/pdf.min.mjs node_modules/pdfjs-dist/build/pdf.worker.min.mjs vendor/
cp node_modules/cytoscape/dist/cytoscape.esm.min.mjs vendor/
# axe-core (a devDependency) stays in node_modules: the accessibility test injects it into the page
# (tests/e2e/test_web_journeys.py); it is never served to users.
test -f node_modules/axe-core/axe.min.js || { echo "error: axe-core is missing from web/node_modules" >&2; exit 1; }
