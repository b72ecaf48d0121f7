"""The analyst -> cross-referencer -> curator crew (CrewAI), run inside the RAG service.

``CrewRunner.analyze`` is the entry point; ``DocumentInputs`` turns a request's text or
document id into a ready document; ``CrewSettings`` holds the ``DOCUTHINKER_CREW_*`` knobs.
CrewAI itself is imported only when a crew first runs (``kickoff``).
"""

from services.rag.crew.documents import DocumentInputs, ResolvedDocument
from services.rag.crew.evidence import Snippet, Topic
from services.rag.crew.runner import DEFAULT_QUESTION, CrewResult, CrewRunner, CrewTaskResult
from services.rag.crew.settings import CrewSettings

__all__ = [
    "DEFAULT_QUESTION",
    "CrewResult",
    "CrewRunner",
    "CrewSettings",
    "CrewTaskResult",
    "DocumentInputs",
    "ResolvedDocument",
    "Snippet",
    "Topic",
]
