"""The crew's CrewAI tools: ``document_search`` (hybrid retrieval) and ``document_topics`` (NLP topics).

Thin adapters onto ``ToolScope``: CrewAI calls them synchronously from the crew's thread.
Importing this module imports CrewAI (~6 s): only the crew's worker thread does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from crewai.tools import BaseTool
from pydantic import BaseModel, Field, PrivateAttr

from services.rag.crew.evidence import search_json, topics_json
from services.rag.crew.scope import SEARCH, TOPICS, ToolScope


class SearchInput(BaseModel):
    query: str = Field(description="What to look for in the document, e.g. a claim to check.")


class DocumentSearchTool(BaseTool):
    name: str = SEARCH
    description: str = (
        "Searches the document under analysis (hybrid keyword + semantic retrieval). "
        "Returns JSON: a list of {source, page, snippet}, best match first."
    )
    args_schema: type[BaseModel] = SearchInput
    _scope: ToolScope = PrivateAttr()
    _agent: str = PrivateAttr()

    def __init__(self, scope: ToolScope, agent_key: str, **data: Any) -> None:
        super().__init__(**data)
        self._scope = scope
        self._agent = agent_key

    def _run(self, query: str) -> str:
        return search_json(self._scope.blocking(lambda: self._scope.find(self._agent, query)))


class TopicsInput(BaseModel):
    pass


class DocumentTopicsTool(BaseTool):
    name: str = TOPICS
    description: str = (
        "Lists the main topics of the document under analysis (weighted keyphrases from the NLP "
        "service). Takes no input. Returns JSON: a list of {topic, weight}, heaviest first."
    )
    args_schema: type[BaseModel] = TopicsInput
    _scope: ToolScope = PrivateAttr()
    _agent: str = PrivateAttr()

    def __init__(self, scope: ToolScope, agent_key: str, **data: Any) -> None:
        super().__init__(**data)
        self._scope = scope
        self._agent = agent_key

    def _run(self, **_: Any) -> str:
        return topics_json(self._scope.blocking(lambda: self._scope.topics(self._agent)))


def tools_for(names: Sequence[str], scope: ToolScope, agent_key: str) -> list[BaseTool]:
    made: dict[str, Callable[[], BaseTool]] = {
        SEARCH: lambda: DocumentSearchTool(scope, agent_key),
        TOPICS: lambda: DocumentTopicsTool(scope, agent_key),
    }
    return [made[n]() for n in names]
