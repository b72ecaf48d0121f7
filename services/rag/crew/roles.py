"""The three crew members (the seed's line-up) and the task each is given.

Prompts are short and carry the evidence in them: the offline model (SmolLM2-135M) cannot
follow CrewAI's tool-calling protocol (measured: with tools bound it writes about the tool
instead of calling it), but it can restate numbered passages. Stronger models also get the
tools bound and may search for more.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.rag.crew.scope import SEARCH, TOPICS


@dataclass(frozen=True)
class Role:
    key: str
    """Settings key of the agent's provider (``DOCUTHINKER_CREW_<KEY>_PROVIDER``)."""
    agent: str
    """Stable agent id reported in each task output."""
    name: str
    goal: str
    backstory: str
    tools: tuple[str, ...]
    instruction: str
    expected_output: str


ANALYST = Role(
    key="analyst",
    agent="document_analyst",
    name="Document Analyst",
    goal="Summarise what the document says, using only its passages.",
    backstory="You read documents closely and never add facts that are not in them.",
    tools=(SEARCH, TOPICS),
    instruction=(
        "Write a short markdown summary of the document: 3 to 5 bullet points that answer the question. "
        "Use only facts from the passages and cite them like [1]."
    ),
    expected_output="A markdown list of 3 to 5 bullet points, each citing a passage like [1].",
)

CROSS_REFERENCER = Role(
    key="cross_referencer",
    agent="cross_referencer",
    name="Cross-Referencer",
    goal="Check the summary's claims against the document's passages.",
    backstory="You are a meticulous fact-checker who quotes the evidence.",
    tools=(SEARCH,),
    instruction=(
        "Review the summary given as context against the passages. For each point, say whether a passage "
        "supports it and cite it like [2]; name any point no passage supports."
    ),
    expected_output="An evidence review: one line per point, supported or not, with citations like [2].",
)

CURATOR = Role(
    key="curator",
    agent="insights_curator",
    name="Insights Curator",
    goal="Turn the analysis into actions, risks and follow-ups.",
    backstory="You advise busy decision makers in a few clear lines.",
    tools=(SEARCH, TOPICS),
    instruction=(
        "Using the summary, the review and the passages, write three short markdown sections: "
        "**Actions**, **Risks** and **Follow-ups**, one or two bullet points each, based only on the passages."
    ),
    expected_output="Markdown with the sections Actions, Risks and Follow-ups.",
)

ROLES: tuple[Role, ...] = (ANALYST, CROSS_REFERENCER, CURATOR)


def task_description(role: Role, question: str, topics: str, evidence: str) -> str:
    topic_line = f"Main topics of the document: {topics}\n" if topics else ""
    return (
        f"Question: {question}\n"
        f"{topic_line}"
        f"Passages from the document:\n{evidence}\n\n"
        f"{role.instruction}"
    )
