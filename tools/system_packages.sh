#!/usr/bin/env bash
# Debian packages the mesh uses beyond the Python tree: Tesseract, for OCR of scanned PDFs and
# page images; Prometheus (with promtool), for the local metrics server and the alert-rule checks.
# Installed only when missing, and only where apt-get can run (root); elsewhere it says what to
# install and carries on: everything but OCR and the local Prometheus works without them.
set -euo pipefail
PACKAGES=(tesseract-ocr tesseract-ocr-eng prometheus)
if command -v tesseract >/dev/null && tesseract --list-langs 2>/dev/null | grep -qx eng \
    && command -v promtool >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
  exit 0
fi
echo "warning: Tesseract or Prometheus is missing and cannot be installed from here; OCR of scans and the" >&2
echo "         local Prometheus stay off." >&2
echo "         Install it with: sudo apt-get install ${PACKAGES[*]}" >&2
