# DocuThinker: one image for every process (the four services, the chat API and the Envoy gateway).
#
#   docker build -t docuthinker:latest .
#   (a CPU-only torch wheel keeps the image small: --build-arg PIP_EXTRA_INDEX_URL=<a torch CPU wheel index>)
#
# Stages: `web` fetches the web app's libraries (npm, exact lock file); `build` makes the virtualenv from the
# pinned tree, the model packages by hash (requirements-models.txt) and pre-assembles the split speech model;
# the final stage holds only the virtualenv, the code and the OS packages it runs with, as a non-root user.
# Nothing is downloaded at run time: HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE are set and every model is inside.

FROM node:22-bookworm-slim AS web
WORKDIR /src/web
COPY web/package.json web/package-lock.json ./
RUN npm ci --omit=optional --no-audit --no-fund --loglevel=error \
 && mkdir vendor \
 && cp node_modules/pdfjs-dist/build/pdf.min.mjs node_modules/pdfjs-dist/build/pdf.worker.min.mjs vendor/ \
 && cp node_modules/cytoscape/dist/cytoscape.esm.min.mjs vendor/

FROM python:3.11-slim-bookworm AS build
ARG PIP_EXTRA_INDEX_URL=""
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH
RUN python -m venv /opt/venv
WORKDIR /app
COPY pyproject.toml requirements.lock requirements-models.txt README.md ./
RUN pip install torch==2.13.0 \
 && pip install --no-deps --require-hashes -r requirements-models.txt
COPY services ./services
COPY gateway ./gateway
COPY gen ./gen
COPY docuthinker_cli ./docuthinker_cli
COPY bench ./bench
# Editable, as `make setup` does: the gateway renders from /app/gateway and /app/web, next to the code.
RUN pip install -c requirements.lock -e .
ENV XDG_CACHE_HOME=/opt/cache
# The speech models assembled from their packages, and the ONNX embedder files (fp32 and int8) exported once
# from the packaged weights into /opt/venv/share.
RUN python -c "from services.speech import assets; [assets.model_dir(a) for a in assets.ASSETS.values()]" \
 && python -m services.models.embedder

FROM python:3.11-slim-bookworm
# Tesseract: OCR of scanned PDFs and page images (the one system dependency of the services).
RUN apt-get update \
 && apt-get install -y --no-install-recommends tesseract-ocr=5.* tesseract-ocr-eng=1:4.* \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin docuthinker
COPY --from=build /opt/venv /opt/venv
COPY --from=build /opt/cache /opt/cache
WORKDIR /app
COPY --from=build /app /app
COPY --from=web /src/web/vendor ./web/vendor
COPY web ./web
COPY deploy/observability ./deploy/observability
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
USER 10001:10001
EXPOSE 50050 50051 50052 50053 50054 8080
# Each Deployment names its process (python -m services.rag ...); this default runs the whole mesh locally.
CMD ["python", "-m", "services.launcher", "--no-demo"]
