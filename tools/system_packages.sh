#!/usr/bin/env bash
# Debian packages the mesh uses beyond the Python tree: Tesseract, for OCR of scanned PDFs and
# page images; Chromium, for the web app's browser test (Playwright drives /usr/bin/chromium);
# Prometheus (with promtool), for the local metrics server and the alert-rule checks; espeak-ng,
# which speaks the test recordings of the speech tests and benchmark; git, which Git sources sync through; Dovecot
# (dovecot-imapd), the IMAP server the source tests start.
# Installed only when missing, and only where apt-get can run (root); elsewhere it says what to
# install and carries on: everything but OCR (and the browser test) works without them.
set -euo pipefail
PACKAGES=(tesseract-ocr tesseract-ocr-eng chromium prometheus espeak-ng git dovecot-imapd)
missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} = 0 ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi
echo "warning: ${missing[*]} missing and cannot be installed from here (OCR / the browser test need them)." >&2
echo "         Install with: sudo apt-get install ${missing[*]}" >&2
