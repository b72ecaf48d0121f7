"""The committed int8 smoothing scales (``int8_smoothing.json``) as the export applies them.

How they are measured, and why they exist: ``int8_calibration``, which writes the file; the export
(``onnx_export``) and the int8 identity (``embedder.identity``) only read it.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import onnx

SCALES_FILE = pathlib.Path(__file__).with_name("int8_smoothing.json")


def scales_digest(path: pathlib.Path = SCALES_FILE) -> str:
    """The first 8 hex digits of the scales file's sha256: part of the int8 file's name and identity."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:8]


def load_scales(path: pathlib.Path = SCALES_FILE) -> dict[str, np.ndarray]:
    """Target node name (a MatMul with a constant weight, or a fused Attention) -> one scale per input channel."""
    data = json.loads(path.read_text())
    return {name: np.asarray(values, dtype=np.float32) for name, values in data["scales"].items()}


def smoothing_targets(model: onnx.ModelProto) -> list[tuple[onnx.NodeProto, str, str]]:
    """(node, activation input, weight initializer) of every node quantised: constant-weight MatMuls and Attention."""
    constants = {init.name for init in model.graph.initializer}
    return [(node, node.input[0], node.input[1]) for node in model.graph.node
            if node.op_type == "Attention" or (node.op_type == "MatMul" and node.input[1] in constants)]
