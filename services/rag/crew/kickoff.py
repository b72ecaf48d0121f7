"""Builds and runs the CrewAI crew; runs in a worker thread (CrewAI is synchronous).

Importing this module imports CrewAI (~6 s), so the runner imports it on the first crew run,
in the worker thread, not at service start.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, cast

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # no phoning home from an offline service
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

from crewai import Agent, Crew, Process, Task

from services.providers.crewai_llm import LLMCallFailed, RouterLLM
from services.rag.crew.plan import AgentRun, CrewPlan
from services.rag.crew.tidy import EMPTY_ANSWER
from services.rag.crew.tools import tools_for

if TYPE_CHECKING:
    from crewai.agents.agent_builder.base_agent import BaseAgent
    from crewai.crews.crew_output import CrewOutput


def run_crew(plan: CrewPlan) -> list[AgentRun]:
    """Runs the tasks in order (Process.sequential: each sees the previous outputs as context).

    Raises the router's domain error when an agent's LLM call failed on every provider.
    """
    llms: list[RouterLLM] = []
    agents: list[BaseAgent] = []
    tasks: list[Task] = []
    for member in plan.members:
        llm = RouterLLM(task="crew", router=member.router, loop=plan.loop, max_tokens=plan.max_tokens,
                        temperature=plan.temperature, empty_answer=EMPTY_ANSWER)
        agent = Agent(
            role=member.role.name,
            goal=member.role.goal,
            backstory=member.role.backstory,
            llm=llm,
            tools=tools_for(member.role.tools, plan.scope, member.role.key) if member.bind_tools else [],
            max_iter=plan.max_iter,
            max_retry_limit=0,  # the router is the one retry layer
            allow_delegation=False,
            verbose=False,
        )
        llms.append(llm)
        agents.append(agent)
        tasks.append(Task(description=member.description, expected_output=member.role.expected_output, agent=agent))
    failure = None
    try:
        output = Crew(agents=agents, tasks=tasks, process=Process.sequential, verbose=False).kickoff()
    except LLMCallFailed as error:
        failure = error.failure
    if failure is not None:
        raise failure  # outside the except block: the domain error alone, not CrewAI's traceback
    return [
        AgentRun(member.role, task_output.raw, tuple(llm.results))
        for member, task_output, llm in zip(plan.members, cast("CrewOutput", output).tasks_output, llms, strict=True)
    ]
