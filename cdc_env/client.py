"""A Python client for ``cdc-env serve``: CdcRepairEnv's interface over HTTP, and one-shot grades.

``HttpEnv(task, url, token=...)`` has CdcRepairEnv's ``reset`` / ``step`` / ``close`` /
``tool_definitions`` and returns the same dicts, so anything written against CdcRepairEnv (the
scripted agents, a harness) runs unchanged against a server::

    env = HttpEnv("handshake", "http://127.0.0.1:8765", token=os.environ["CDC_TOKEN"])
    obs = env.reset()
    out = env.step("read", {"path": "hs_sync.v"})

``ServerClient`` holds the connection and also lists tasks, fetches the tool definitions,
grades one-shot submissions and reads the health endpoint. A server error becomes ``ServerError``
(a ``CdcError`` with the HTTP status and the server's error code); a transport failure is a
``CdcError`` too. Harness errors that CdcRepairEnv raises (``step`` before ``reset``, use after
``close``) raise here the same way.

Not covered: retries (a failed call may be retried by the caller; a step that failed with 503
``worker_failed`` had no effect), asyncio (use httpx.AsyncClient against the same endpoints).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

try:
    import httpx
except ModuleNotFoundError as exc:  # the core install has no HTTP client
    raise ModuleNotFoundError("cdc_env.client needs the 'client' extra: pip install 'cdc_env[client]'",
                              name=exc.name) from None

from .errors import CdcError
from .task import Task

DEFAULT_TIMEOUT = 900.0  # seconds: a submit with every hidden seed is a long call


class ServerError(CdcError):
    """The server answered with an error: ``status`` (HTTP), ``code`` and the server's message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"server error {status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class ServerClient:
    """One connection to a cdc_env server (thread-safe, as httpx.Client is)."""

    def __init__(self, url: str, *, token: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        self.url = url.rstrip("/")
        self.http = httpx.Client(base_url=self.url + "/v1", headers=headers, timeout=timeout)

    def call(self, method: str, path: str, body: dict | None = None) -> Any:
        """One request; the decoded JSON answer, or ServerError / CdcError."""
        try:
            resp = self.http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            raise CdcError(f"cannot reach the cdc_env server at {self.url}: {exc}") from None
        try:
            data = resp.json()
        except ValueError:
            data = None
        if resp.is_success and data is not None:
            return data
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict):
            raise ServerError(resp.status_code, str(err.get("code")), str(err.get("message")))
        raise ServerError(resp.status_code, "http_error", resp.text[:200])

    def health(self) -> dict:
        return self.call("GET", "/health")

    def tasks(self) -> list[dict]:
        return self.call("GET", "/tasks")["tasks"]

    def tool_definitions(self) -> list[dict]:
        return self.call("GET", "/tools")["tools"]

    def grade(self, task: str, submission: str | bytes, *, hidden: int | str | None = None,
              sim: str | None = None) -> dict:
        """Grade a one-shot submission (file text or unified diff); the grade report."""
        if isinstance(submission, bytes):
            submission = submission.decode("utf-8")
        body: dict[str, Any] = {"task": task, "submission": submission}
        body.update({k: v for k, v in (("hidden", hidden), ("sim", sim)) if v is not None})
        return self.call("POST", "/grade", body)

    def env(self, task: str | Task, **kw: Any) -> HttpEnv:
        return HttpEnv(task, client=self, **kw)

    def close(self) -> None:
        self.http.close()


class HttpEnv:
    """CdcRepairEnv over HTTP; see CdcRepairEnv's docstring for the episode rules and results.

    Args:
        task: a task id the server serves (a Task or a task folder is reduced to its id).
        url, token: the server; or ``client``, a ServerClient to share.
        max_steps, max_sim_runs: the episode's budgets (the server caps them).
        hidden, sim: hidden seeds and simulator for submissions; None takes the server's defaults.
        rung: the information rung of the episodes (cdc_env.rungs); None: full.
        gate, sandbox: accepted for CdcRepairEnv compatibility; the server always runs both, so
            False is refused.

    ``reset()`` starts a new server episode (closing this object's previous one, if any), so the
    episode id changes; ``episode_id`` holds the current one.
    """

    def __init__(self, task: str | Path | Task, url: str | None = None, *, token: str | None = None,
                 client: ServerClient | None = None, max_steps: int = 30, max_sim_runs: int = 6,
                 hidden: int | str | None = None, sim: str | None = None, gate: bool = True,
                 sandbox: bool = True, timeout: float = DEFAULT_TIMEOUT, rung: str | None = None) -> None:
        if not gate or not sandbox:
            raise CdcError("a cdc_env server always runs the static gate and the sandbox")
        if client is None and url is None:
            raise CdcError("HttpEnv needs the server's url (or a ServerClient)")
        if isinstance(task, Task):
            self.task_id = task.id
        elif isinstance(task, Path) or "/" in str(task):
            from .task import load_task

            self.task_id = load_task(task).id
        else:
            self.task_id = str(task)
        self._owns_client = client is None
        self.client = client if client is not None else ServerClient(url or "", token=token, timeout=timeout)
        self.start_args: dict[str, Any] = {"task": self.task_id, "max_steps": max_steps,
                                           "max_sim_runs": max_sim_runs}
        self.start_args.update({k: v for k, v in (("hidden", hidden), ("sim", sim), ("rung", rung))
                                if v is not None})
        self.episode_id: str | None = None
        self._closed = False

    def reset(self, rung: str | None = None) -> dict:
        """Start a new episode on the server; its first observation (CdcRepairEnv.reset's keys).
        ``rung`` (default: the constructor's, else full) is the episode's information rung."""
        self._check_open()
        self._end_episode()
        out = self.client.call("POST", "/episodes", {**self.start_args, **({"rung": rung} if rung else {})})
        self.episode_id = out.pop("episode_id")
        out.pop("idle_timeout_s", None)
        return out

    def step(self, tool_name: object, args: object = None) -> dict:
        """One tool call; CdcRepairEnv.step's result (the report in its own field)."""
        self._check_open()
        if self.episode_id is None:
            raise CdcError("call reset() before step()")
        if isinstance(args, bytes):
            args = args.decode("utf-8", errors="replace")
        return self.client.call("POST", f"/episodes/{self.episode_id}/step",
                                {"tool": tool_name, "arguments": args})

    def tool_definitions(self) -> list[dict]:
        """The five tools in the OpenAI function-calling format."""
        return self.client.tool_definitions()

    def close(self) -> None:
        """Close the server episode (freeing its scratch space) and, if owned, the connection."""
        if self._closed:
            return
        try:
            self._end_episode()
        finally:
            self._closed = True
            if self._owns_client:
                self.client.close()

    def _end_episode(self) -> None:
        eid, self.episode_id = self.episode_id, None
        if eid is None:
            return
        try:
            self.client.call("DELETE", f"/episodes/{eid}")
        except ServerError as exc:
            if exc.status not in (404, 410):  # already gone (expired or closed) is fine
                raise

    def _check_open(self) -> None:
        if self._closed:
            raise CdcError("this HttpEnv is closed; create a new one")

    def __enter__(self) -> HttpEnv:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
