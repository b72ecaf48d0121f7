#!/usr/bin/env bash
# Debian packages the mesh uses beyond the Python tree: Tesseract, for OCR of scanned PDFs and
# page images; espeak-ng, which speaks the test recordings of the speech tests and benchmark. Installed only when missing, and only where apt-get can run (root); elsewhere it
# says what to install and carries on: everything but OCR works without it.
set -euo pipefail
PACKAGES=(tesseract-ocr tesseract-ocr-eng espeak-ng)
if command -v tesseract >/dev/null && tesseract --list-langs 2>/dev/null | grep -qx eng \
    && command -v espeak-ng >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
  exit 0
fi
echo "warning: Tesseract or espeak-ng is missing and cannot be installed from here; OCR of scans stays off" \
  "and the speech tests cannot make their recordings." >&2
echo "         Install it with: sudo apt-get install ${PACKAGES[*]}" >&2
