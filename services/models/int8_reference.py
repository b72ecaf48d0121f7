"""Rewrites or shows the int8 embedder's reference vectors (``int8_reference.json``), which ``int8_kernels.verify``
holds every host's int8 kernels against: ``python -m services.models.int8_reference [--write]``."""

from __future__ import annotations

import argparse
import json

from services.models.embedder import build_embedder
from services.models.int8_kernels import REFERENCE, check, write_reference
from services.models.settings import embedder_settings


def main() -> None:
    parser = argparse.ArgumentParser(description="the int8 embedder's reference vectors")
    parser.add_argument("--write", action="store_true", help="rewrite int8_reference.json from this host")
    args = parser.parse_args()
    settings = embedder_settings().model_copy(update={"verify_kernels": False})
    embedder = build_embedder(settings, "onnx-int8")
    if args.write:
        write_reference(embedder, embedder.model_file)
        print(f"wrote {REFERENCE}")
    print(json.dumps(check(embedder, embedder.model_file).as_dict(), indent=2))


if __name__ == "__main__":
    main()
