"""all-MiniLM-L6-v2 on ONNX Runtime: the exported graph (``onnx_export``) fed length-sorted batches.

Tokenisation is the model's own fast tokenizer (``tokenizer.json``) with sentence-transformers'
limit of 256 tokens. Texts are sorted by token count and cut into batches, each padded only to
its own longest text, so short texts never pay for a long one's padding.

The batches run as ``streams`` concurrent passes of ``threads`` intra-op threads each, on one
session (ONNX Runtime's ``run`` is thread-safe, and a session with one intra-op thread runs a pass
on its caller's thread). On 2 cores two one-thread streams encode 1.3x as fast as one pass over
both cores: the small batches that pad least leave a two-thread pass waiting on its own
synchronisation (services/models/settings.py has the figures). Concurrent ``encode`` calls share
the streams batch by batch, first come first served.
"""

from __future__ import annotations

import os
import pathlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

MAX_TOKENS = 256
"""sentence-transformers' ``max_seq_length`` for this model (``sentence_bert_config.json``)."""


class OnnxEmbedder:
    """Thread-safe; at most ``streams`` forward passes at a time, each using ``threads`` cores."""

    def __init__(self, model_file: pathlib.Path, tokenizer_file: pathlib.Path, *, name: str, dimension: int,
                 identity: str, runtime: str, batch_size: int = 32, threads: int = 1, streams: int = 0) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(MAX_TOKENS)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # ONNX Runtime's own thread pool spins between ops by default; with the cores shared (other
        # requests, services) that burns their time, as OpenMP's did (bench/README.md, the same trap).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        self.model_file = pathlib.Path(model_file)
        self._name, self._dimension, self._identity, self.runtime = name, dimension, identity, runtime
        self.batch_size = batch_size
        self.device = "cpu"  # CPUExecutionProvider only; DOCUTHINKER_DEVICE=cuda needs the torch runtime
        self.threads = threads
        self.streams = streams or max(1, (os.cpu_count() or 1) // threads)
        self._streams = ThreadPoolExecutor(self.streams, thread_name_prefix="embed-stream")
        self._room = threading.Condition()
        self._queued = 0
        """Passes submitted to the streams and not started yet."""

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def identity(self) -> str:
        return self._identity

    def encode(self, texts: list[str], batch_size: int | None = None) -> np.ndarray:
        """L2-normalised float32 embeddings, one row per text, in the order given."""
        return self.start(texts, batch_size)()

    def start(self, texts: list[str], batch_size: int | None = None) -> Callable[[], np.ndarray]:
        """Queues the passes of ``texts`` on the streams and returns what waits for their rows (``encode``
        in two steps, so that a caller can queue its next call only once every pass of this one runs)."""
        out = np.zeros((len(texts), self._dimension), dtype=np.float32)
        if not texts:
            return lambda: out
        batch_size = batch_size or self.batch_size
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
        with self._room:
            self._queued += len(batches)
        passes = [self._streams.submit(self._started_pass, encodings, rows) for rows in batches]

        def rows() -> np.ndarray:
            for batch, done in zip(batches, passes, strict=True):
                out[batch] = done.result()
            return out

        return rows

    def wait_for_room(self) -> None:
        """Returns once every queued pass has started: the streams will want more work next."""
        with self._room:
            self._room.wait_for(lambda: self._queued == 0)

    def _started_pass(self, encodings: list, rows: list[int]) -> np.ndarray:
        with self._room:
            self._queued -= 1
            if self._queued == 0:
                self._room.notify_all()
        return self._pass(encodings, rows)

    def _pass(self, encodings: list, rows: list[int]) -> np.ndarray:
        width = max(len(encodings[i].ids) for i in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for r, i in enumerate(rows):
            tokens = encodings[i].ids
            ids[r, : len(tokens)] = tokens
            mask[r, : len(tokens)] = 1
        (vectors,) = self._session.run(None, {"input_ids": ids, "attention_mask": mask})
        return vectors
