"""Generates Python stubs and Envoy's descriptor set from proto/ in one step.

Usage: python tools/protogen.py [--out DIR] [--descriptor FILE]
The defaults write into the repository (gen/ and gateway/docuthinker.pb); the staleness
test points them at a temporary directory and compares.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import grpc_tools
from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
GOOGLEAPIS = ROOT / "third_party" / "googleapis"
WELL_KNOWN = pathlib.Path(grpc_tools.__file__).parent / "_proto"


def contract_files() -> list[str]:
    return sorted(str(p.relative_to(PROTO_ROOT)) for p in PROTO_ROOT.rglob("*.proto"))


def generate(out: pathlib.Path, descriptor: pathlib.Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    descriptor.parent.mkdir(parents=True, exist_ok=True)
    includes = [f"-I{PROTO_ROOT}", f"-I{GOOGLEAPIS}", f"-I{WELL_KNOWN}"]
    files = contract_files()
    code = protoc.main(
        ["protoc", *includes, f"--python_out={out}", f"--pyi_out={out}", f"--grpc_python_out={out}", *files]
    )
    if code != 0:
        sys.exit(f"protoc failed generating Python code ({code})")
    # The transcoder renders google.rpc.Status details only for types in the descriptor set.
    code = protoc.main(
        [
            "protoc",
            *includes,
            "--include_imports",
            "--include_source_info",
            f"--descriptor_set_out={descriptor}",
            *files,
            "google/rpc/error_details.proto",
        ]
    )
    if code != 0:
        sys.exit(f"protoc failed writing the descriptor set ({code})")
    for package_dir in {p.parent for p in out.rglob("*_pb2.py")}:
        walk = package_dir
        while walk != out:
            (walk / "__init__.py").touch()
            walk = walk.parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "gen")
    parser.add_argument("--descriptor", type=pathlib.Path, default=ROOT / "gateway" / "docuthinker.pb")
    args = parser.parse_args()
    generate(args.out, args.descriptor)


if __name__ == "__main__":
    main()
