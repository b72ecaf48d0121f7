#!/usr/bin/env bash
# `make image`: the Dockerfile built with podman from a Debian base made here (no registry is needed or reachable).
#   1. podman, buildah, runc, debootstrap, nftables, podman-compose from Debian's archive when missing (root only);
#   2. localhost/debian-base:bookworm from `debootstrap --variant=minbase`, skipped when that image exists;
#   3. `podman build --build-arg BASE=localhost/debian-base:bookworm`, timed; its size and the build time go into
#      bench/results/cluster-<date>.json (tools/cluster/results.py).
# Podman runs with the project's containers.conf and storage.conf (deploy/podman/), never /etc's.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="$PWD/deploy/podman/containers.conf" CONTAINERS_STORAGE_CONF="$PWD/deploy/podman/storage.conf"
TAG="${IMAGE_TAG:-localhost/docuthinker:latest}"
BASE="${BASE_IMAGE:-localhost/debian-base:bookworm}"
PY="${PY:-.venv/bin/python}"

missing=()
for tool in podman:podman buildah:buildah runc:runc debootstrap:debootstrap nft:nftables nsenter:util-linux \
    podman-compose:podman-compose; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
if [ ${#missing[@]} != 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "make image needs ${missing[*]} (sudo apt-get install ${missing[*]}) and root" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! podman image exists "$BASE"; then
  # The mirror apt already uses: the only Debian archive these machines reach.
  mirror="$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1)"
  mirror="${mirror:-http://deb.debian.org/debian}"
  root="$(mktemp -d /var/tmp/debian-base.XXXXXX)"
  trap 'rm -rf "$root"' EXIT
  echo "debootstrap bookworm from $mirror (a few minutes, once) ..."
  nice -n 10 debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 || { tail -20 "$root.log" >&2; exit 1; }
  rm -f "$root.log"
  # apt's caches and lists are rebuilt by each `apt-get update`; without them the base is ~120 MB instead of ~200.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | podman import --message "debootstrap --variant=minbase bookworm $mirror" - "$BASE" >/dev/null
  rm -rf "$root"
  trap - EXIT
fi

# Downloads at build time come from the pip cache this machine already has (make setup filled it) and /opt/wheels
# (the CPU torch wheel) where present: mounted into the build (the wheels read-only), never into the image.
volumes=()
[ -d /root/.cache/pip ] && volumes+=(-v /root/.cache/pip:/root/.cache/pip)
args=()
[ -d /opt/wheels ] && volumes+=(-v /opt/wheels:/opt/wheels:ro) && args+=(--build-arg PIP_FIND_LINKS=/opt/wheels)
# This machine's CA bundle, for pip's HTTPS where a site adds its own authority to it.
[ -f /etc/ssl/certs/ca-certificates.crt ] && volumes+=(-v /etc/ssl/certs/ca-certificates.crt:/etc/pip-ca.crt:ro) \
  && args+=(--build-arg PIP_CERT=/etc/pip-ca.crt)
# The interpreter: a CPython 3.11.5+ prefix (Debian 12's 3.11.2 is too old for the locked tree), the one make setup
# uses unless PYTHON_PREFIX names another.
prefix="${PYTHON_PREFIX:-$(python3.11 -c 'import sys; print(sys.base_prefix)')}"
volumes+=(-v "$prefix:/mnt/python:ro")
# NO_CACHE=1: every step built again (the build time recorded is then a whole build's, not what the cache left).
[ "${NO_CACHE:-0}" = 1 ] && args+=(--no-cache)
log="$(mktemp)"
started=$(date +%s.%N)
nice -n 10 podman build --format docker --network host --build-arg "BASE=$BASE" "${args[@]}" "${volumes[@]}" -t "$TAG" . \
  | tee "$log"
finished=$(date +%s.%N)
cached=$(grep -c '^--> Using cache' "$log" || true)
rm -f "$log"
"$PY" -m tools.cluster record-image --tag "$TAG" --base "$BASE" --build-s "$(echo "$finished - $started" | bc)" \
  --cached-steps "$cached"
