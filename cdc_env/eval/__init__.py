"""Model runs: one-shot and agentic evaluation against any OpenAI-compatible Chat Completions endpoint.

The package, one concern a module:

    settings.py   EvalSettings (what a run is; ``hidden`` decoded once here), URLs, task names
    parse.py      the one-shot answer parser (the prompts are public: cdc_env.prompts)
    client.py     the endpoint: reachability check, bounded retries, the API key
    rollout.py    one rollout, one-shot or agentic: conversation, grade, row, trajectory
    results.py    results.jsonl and --resume
    summary.py    pass rates, overfit rate, structural-validity gap, pass@k; Markdown tables
    grading.py    where the grades run: this process, --workers (a local pool) or --ray
    run.py        run_eval (controls, rollouts, metadata, summary) and the progress display

``run_eval(settings, out_dir)`` first runs the controls (``cdc_env.fixtures.run_controls``: correct
fixes must pass, hacks must be caught; if one misbehaves nothing is written and no model is
called), then runs ``samples`` rollouts per task and information rung (``settings.rungs``,
cdc_env.rungs), ``concurrency`` at a time, through the official ``openai`` client, and leaves in
``out_dir``:

    results.jsonl      one row per finished rollout (``ROW_FIELDS`` and a few more: ``rung``,
                       ``control``, ``changed`` -- the submission differs from the given design)
    metadata.json      versions, seeds, settings, the endpoint without secrets, the controls
    summary.json/.md   pass rate by task, family and rung, overfit rate, structural-validity gap,
                       unbiased pass@k (per task and rung), refusals, parse failures, endpoint
                       errors; the no-bug controls (``<family>_control`` tasks) apart, with their
                       over-editing rate (changed, broke), never in a defect task's rate
    rollouts/<task>/[<rung>-]s<k>/trajectory.json   the conversation, each tool step, the
                       submission and the grade report(s): the evidence to re-grade without
                       re-running the model (no rung prefix at full)

The "controls" run first are the grader's own fixture controls (a correct fix passes, a hack is
caught); the no-bug control *tasks* are ordinary rollouts.

Two modes:
    oneshot: one request (bug report, the editable file, the timing contract, the answer format);
        the answer is read by ``parse_answer`` and graded with ``cdc_env.grade.grade``.
    agentic: the tool-calling loop over ``CdcRepairEnv``'s five tools until submit or a budget
        ends the episode. A reply without a tool call gets one reminder per episode; the next
        one without a tool call makes the harness submit the design as it stands.

Row labels: the grader's verdicts (pass, fail, overfit, compile_error, refused, timeout,
tool_error) and, from the model side, ``refused`` with ``failed_stage == "model"`` (a refusal or
content filter, the endpoint's reason kept in ``refusal``), ``refused_parse`` (one-shot: no
gradable answer; reward 0, counted on its own) and ``endpoint_error`` (the endpoint kept failing
after bounded retries; not a result: ``--resume`` runs it again). ``endpoint_error`` and
``tool_error`` rows are not results: their ``reward`` is null and every rate leaves them out,
with their count shown beside it.

Before anything else the endpoint is reached once (``Endpoint.check``): an unreachable endpoint
stops the run within seconds with one line, before the controls spend minutes.

The grader's report never enters the conversation: the model sees only ``observation`` texts.
For a submission refused by the static gate the harness also grades it with the gate off (the
simulation verdict the structural-validity gap needs); that report goes to the trajectory only.

Not covered: streaming requests, the Responses API, model-specific prompt tuning, cost in money.
"""

from __future__ import annotations

from .client import Endpoint, EndpointError, EndpointUnavailable, Reply, api_key_for
from .grading import IN_PROCESS, Grader, Grading, NoGrader, open_grading
from .parse import ParsedAnswer, parse_answer
from .results import NOT_RESULTS, ROW_FIELDS, Results
from .rollout import Rollout, gate_result, run_agentic, run_oneshot, run_rollout
from .run import Controls, ControlsFailed, Progress, ProgressBar, default_controls, run_eval
from .settings import MODES, OPERATIONAL, EvalSettings, is_loopback, redact_url, resolve_tasks
from .summary import pass_at_k, summarize, summary_markdown

__all__ = [
    "IN_PROCESS", "MODES", "NOT_RESULTS", "OPERATIONAL", "ROW_FIELDS", "Controls", "ControlsFailed",
    "Endpoint", "EndpointError", "EndpointUnavailable", "EvalSettings", "Grader", "Grading", "NoGrader",
    "ParsedAnswer", "Progress", "ProgressBar", "Reply", "Results", "Rollout", "api_key_for",
    "default_controls", "gate_result", "is_loopback", "open_grading", "parse_answer", "pass_at_k",
    "redact_url", "resolve_tasks", "run_agentic", "run_eval", "run_oneshot", "run_rollout", "summarize",
    "summary_markdown",
]
