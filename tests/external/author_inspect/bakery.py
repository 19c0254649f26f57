"""The bakery's stock questions: a stand-in for a benchmark author's own inspect task, written by the
repro project for its tests and docs (tests/external/test_inspect_author.py copies it into an
author's repository outside the project's tree and runs it from there). The model answers with the
help of one tool; the scorer is plain code, so `repro check` runs it again on the recorded samples."""

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState, generate, system_message, use_tools
from inspect_ai.tool import tool

STOCK = {"rye": 25, "wheat": 40, "spelt": 0}


@tool
def flour_stock():
    async def execute(kind: str) -> str:
        """Kilograms of one kind of flour in the bakery's store.

        Args:
            kind: the kind of flour, e.g. rye

        Returns:
            The kilograms in stock.
        """
        return str(STOCK.get(kind.strip().lower(), 0))

    return execute


@scorer(metrics=[accuracy()])
def stock_answer():
    """Correct when the model asked the tool and its answer names the stocked kilograms."""

    async def score(state: TaskState, target: Target) -> Score:
        asked = any(m.role == "assistant" and m.tool_calls for m in state.messages)
        said = target.text in state.output.completion
        return Score(value=CORRECT if asked and said else INCORRECT, answer=state.output.completion[:200])

    return score


@task
def bakery():
    return Task(
        dataset=[
            Sample(id=kind, input=f"How many kilograms of {kind} flour are in the store?", target=str(kilos))
            for kind, kilos in STOCK.items()
        ],
        solver=[
            system_message("You keep the bakery's store. Use the flour_stock tool."),
            use_tools(flour_stock()),
            generate(),
        ],
        scorer=stock_answer(),
    )
