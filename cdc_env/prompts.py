"""The public prompts: what a model is told, the same for ``cdc-env eval``, the adapters and any
harness that wants to match the published numbers.

    SYSTEM_PROMPT          one-shot system prompt (answer with the whole file in a fenced block)
    AGENT_SYSTEM_PROMPT    agentic system prompt (work only through the five tools)
    task_prompt(task, ...) the agentic task prompt: bug report, the editable file's name, the
                           tools by name and the budgets -- CdcRepairEnv.reset()'s observation. The
                           tool descriptions are not repeated here: they go in the request's
                           ``tools`` (CdcRepairEnv.tool_definitions()).
    oneshot_prompt(task)   the one-shot user prompt (bug report, the file, the timing contract,
                           the answer format); oneshot_messages(task) = system + user.

Every prompt takes a ``rung`` (cdc_env.rungs: ``full``, ``symptom``, ``minimal``), which chooses
the bug report and title. A no-bug control is introduced by the id of the task it derives from,
so that its name does not give it away; at the symptom and minimal rungs every task is named by
its top module (task_name).
    REMINDER               what the eval harness says once when a reply has no tool call.

Not covered: chat templates and tool-call formats (the harness's job).
"""

from __future__ import annotations

from . import paths
from .rungs import DEFAULT_RUNG, report, title
from .task import Task
from .tools import TOOL_NAMES

CONTRACT_NAME = "CONTRACT.md"

SYSTEM_PROMPT = "You are an expert digital designer who repairs clock-domain-crossing (CDC) bugs in Verilog."
AGENT_SYSTEM_PROMPT = (SYSTEM_PROMPT + " You work only through the tools you are given: read the design "
                       "and the timing contract, write the repaired file, check it with run_visible, "
                       "then submit.")
REMINDER = ("Your reply had no tool call. Work through the tools: write the repaired {editable} and call "
            "submit when you are done. If your next reply has no tool call either, your current "
            "{editable} is submitted as it is.")


def task_name(task: Task, rung: str = DEFAULT_RUNG) -> str:
    """The name a prompt gives the task: its id at ``full`` (a no-bug control: its task's id, so
    the name does not give it away), its top module's name at the other rungs (an id such as
    ``fifo_x_rdbin`` would name the crossing)."""
    return (task.base or task.id) if rung == "full" else task.top


def _head(task: Task, rung: str) -> str:
    """``Task: <name> -- <title>`` and the bug report at ``rung``."""
    return f"Task: {task_name(task, rung)} -- {title(task, rung)}\n\n{report(task, rung).strip()}"


def task_prompt(task: Task, max_steps: int = 30, max_sim_runs: int = 6, rung: str = DEFAULT_RUNG) -> str:
    """The agentic task prompt (the first observation of an episode), without the budget line."""
    return (f"{_head(task, rung)}\n\n"
            f"The one file you may change: {task.editable}. You may read it and {CONTRACT_NAME}, "
            f"the synchronizers' timing contract (also given by the contract tool).\n\n"
            f"Tools: {', '.join(TOOL_NAMES)} (described in the tool definitions).\n\n"
            f"Budgets: {max_steps} tool calls and {max_sim_runs} simulation runs "
            f"(run_visible). Every call counts, including refused ones. When the tool calls "
            f"run out, your current design is submitted as it is.")


def oneshot_prompt(task: Task, rung: str = DEFAULT_RUNG) -> str:
    """The one-shot user prompt: bug report, the editable file, the timing contract, the answer format."""
    contract = paths.contract_file().read_text(encoding="utf-8").strip()
    return (f"{_head(task, rung)}\n\n"
            f"The file you may change, {task.editable}:\n\n"
            f"```verilog\n{task.given_text.rstrip()}\n```\n\n"
            f"The timing contract of the provided synchronizer primitives ({CONTRACT_NAME}):\n\n"
            f"{contract}\n\n"
            f"Answer format: give the complete new text of {task.editable} -- the whole file, not an "
            f"excerpt -- in one fenced code block (```verilog ... ```). Prose before or after the block "
            f"is fine. If your answer holds several fenced blocks, only the last one that defines "
            f"module {task.top} (through its endmodule) is graded. Keep the module name and port list.")


def oneshot_messages(task: Task, rung: str = DEFAULT_RUNG) -> list[dict]:
    """The one-shot request's messages: system prompt and user prompt."""
    return [{"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": oneshot_prompt(task, rung)}]


def agent_messages(task: Task, max_steps: int = 30, max_sim_runs: int = 6,
                   rung: str = DEFAULT_RUNG) -> list[dict]:
    """The agentic conversation's opening: system prompt and task prompt."""
    return [{"role": "system", "content": AGENT_SYSTEM_PROMPT},
            {"role": "user", "content": task_prompt(task, max_steps, max_sim_runs, rung)}]
