"""`llm_judge`: an LLM decides whether each tool call served the user's request (Mastra's LLM scorer).

The only module of `toolscore.scorers` that talks to a model, through litellm (any provider string).
litellm is imported on first use, so loading scorer specs stays fast, with the environment telling it
to stay offline for that import: the bundled model cost map and Anthropic beta-header table instead of
fetching them from GitHub (litellm 1.x has no other import-time or telemetry traffic). The variables are
set only around the import and only when unset, so the host application's environment is left as it
was, and an operator who sets them explicitly keeps their choice.

Flow of one evaluation: build the prompt → cache lookup → (wait for a concurrency slot → request →
validate) with retries → score. The cache and the concurrency limit belong to the judge's
parameters: equal judges share them, across threads and event loops (see `llm_judge_state`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
import random
import re
import sys
import threading
from typing import Any, ClassVar, Literal

from opentelemetry.trace import Span, Tracer
from pydantic import Field, PrivateAttr

from toolscore.scorers._base import ScorerBase
from toolscore.scorers._llm_judge_prompt import AvailableTool, MalformedVerdict, Verdict, build_messages, parse_verdict
from toolscore.scorers._llm_judge_state import SharedState, shared_state
from toolscore.scorers._llm_judge_trace import judge_span, record_response
from toolscore.scorers._masked import names_only
from toolscore.scorers._model import AgentRun, Score, ScoreFailure, ScoreResult

__all__ = ["AvailableTool", "LLMJudge"]

_OFFLINE_AT_IMPORT = ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS")
"""litellm reads these once, when it is imported: with them set, it fetches nothing at import."""

_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_MAX_ECHO_CHARS = 4000
_MISSING_KEY = re.compile(
    r"missing (?:\w+ )?(?:credentials|api[ _-]?key)|api[ _-]?key client option must be set|no api[ _-]?key", re.I
)
"""How litellm and the provider SDKs say no key was given; they raise it as a 500 or a connection error
(`openai/...`: InternalServerError "Missing credentials. Please pass an `api_key` ..."), so the status
alone would have it retried."""


def _catalog(run: AgentRun) -> tuple[AvailableTool, ...]:
    """The tools the run's model was offered (read from its trace), as the judge is told about them."""
    return tuple(AvailableTool(name=tool.name, description=tool.description or "") for tool in run.available_tools)


_IMPORTED: list[Any] = []
"""litellm once its import has finished (`sys.modules` holds it from the import's start: a judge on another
thread reading it there meanwhile got a partially initialized module, `AttributeError: ... AuthenticationError`)."""
_IMPORT_LOCK = threading.Lock()


def _litellm() -> Any:
    """litellm, imported on first use; its "Give Feedback" banner would land in the CLI's stdout."""
    if _IMPORTED:
        return _IMPORTED[0]
    with _IMPORT_LOCK:  # one import at a time; the others wait for it to finish
        if _IMPORTED:
            return _IMPORTED[0]
        added = [name for name in _OFFLINE_AT_IMPORT if name not in os.environ]
        os.environ.update(dict.fromkeys(added, "True"))
        try:
            import litellm
        finally:
            for name in added:
                os.environ.pop(name, None)
        litellm.suppress_debug_info = True
        _IMPORTED.append(litellm)
    return litellm


_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
"""The loggers litellm gives a handler of its own when it is imported (`litellm._logging`)."""


def _log_through_the_application() -> None:
    """Each litellm log record once, where the application's logging configuration sends it.

    litellm adds its own stream handler to its loggers (to stdout or stderr, by release) and leaves them propagating,
    so once the application has configured logging (a handler on the root logger, as `logging.basicConfig` or
    `toolscore serve` sets), every line of each judge call is written twice: once by litellm, once by the
    application's handlers, in the application's format. Then litellm's own handler is taken off (only that
    one: handlers the application added stay, and a logger litellm stopped from propagating, in its JSON mode,
    keeps its handler), and the application's configuration decides what is shown and where. Checked on each
    call, since an application may configure logging after the first judge call imported litellm.
    """
    if not logging.getLogger().handlers:
        return
    for name in _LITELLM_LOGGERS:
        logger = logging.getLogger(name)
        if not logger.propagate:
            continue
        for handler in list(logger.handlers):
            if _is_litellms_own(handler):
                logger.removeHandler(handler)


def _is_litellms_own(handler: logging.Handler) -> bool:
    """Whether `handler` is the one litellm's import put on its loggers.

    Recent litellm gives it a class of its own (the only way to tell it when it has been replaced); older
    releases use a plain `logging.StreamHandler`, which only its identity with `litellm._logging.handler` tells
    apart from a stream handler the application added itself.
    """
    own = getattr(sys.modules.get("litellm._logging"), "handler", None)
    return handler is own or type(handler).__module__.startswith("litellm.")


class _Failed(Exception):
    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type


class LLMJudge(ScorerBase):
    """Fraction of the run's tool calls that an LLM judge finds appropriate for the user's request.

    Score = appropriate calls / calls. A run with no calls scores 1.0 when the judge says no tool
    was needed (e.g. the agent rightly asked for clarification), else 0.0. A run without a user
    request cannot be judged: `judge_missing_input`. Judge failures are `ScoreFailure`s:
    `judge_malformed_output` (still invalid after `max_retries` retries), `judge_timeout`,
    `judge_auth` (no API key, or the provider refused it: not retried, and the message names the
    variable or `api_key` to set), `judge_error` (HTTP or provider error; 4xx other than
    408/409/425/429 are not retried) and `judge_running_loop` (sync `score` called on a thread that
    runs an event loop).

    The default threshold is 0.5: the judge is strict (a merely helpful extra call is
    "inappropriate") and noisy per call, so one doubtful call in a longer run should not flip the
    label; `pass` means at least half of the calls were appropriate. Set 1.0 to fail on any.
    """

    type: Literal["llm_judge"] = "llm_judge"
    model: str = Field(description="Any litellm model string, e.g. `openai/gpt-4o-mini`, `ollama/llama3`.")
    available_tools: tuple[AvailableTool, ...] = Field(
        default=(),
        description="Tools the agent could call. Default: [] (the run's own catalog, `AgentRun.available_tools`, "
        "the tools its model was offered as the trace records them).",
    )
    api_base: str | None = Field(default=None, description="Endpoint URL. Default: litellm's for the provider.")
    api_key: str | None = Field(default=None, repr=False, description="Default: litellm's provider env var.")
    timeout_s: float = Field(default=30.0, gt=0, description="Per request, in seconds.")
    max_retries: int = Field(default=2, ge=0, description="Retries after a malformed, failed or timed-out reply.")
    backoff_s: float = Field(default=0.5, ge=0, description="First retry delay, doubled per retry, with jitter.")
    max_concurrency: int = Field(default=4, ge=1, description="Requests in flight, shared by equal judges.")
    cache_size: int = Field(default=1024, ge=0, description="Verdicts kept by prompt hash; 0 disables.")
    temperature: float = Field(default=0.0, ge=0, description="Sampling temperature of the judge.")

    default_threshold: ClassVar[float] = 0.5
    values_needed: ClassVar[str] = "the judge reads the user's request and the calls' arguments"

    _state: SharedState = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        """Equal judges share one cache and one limit; `name` and `threshold` do not change a verdict."""
        super().model_post_init(context)
        key = tuple((k, v) for k, v in self.__dict__.items() if k not in ("name", "threshold"))
        self._state = shared_state(key, self.max_concurrency, self.cache_size)

    def __eq__(self, other: object) -> bool:
        """Equal parameters make equal scorers; the cache and limiter are runtime state."""
        return type(other) is type(self) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), *self.__dict__.values()))

    def _score(self, run: AgentRun) -> ScoreResult:
        """Blocking form for the batch CLI: runs `ascore` on a private event loop.

        Must not be called from a thread that runs an event loop (it would block that loop, and
        any judge work waiting on it); that yields a `judge_running_loop` failure instead.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore(run))
        return ScoreFailure(
            name=self.scorer_name, error_type="judge_running_loop", message="score() called in a running loop"
        )

    async def ascore(self, run: AgentRun, *, tracer: Tracer | None = None) -> ScoreResult:
        """Judge one run; never raises (cancellation aside).

        Runs on any event loop, typically one on a worker thread: it waits on the network, so it
        must never run on a thread that ends spans. Each request is a GenAI `chat` span of `tracer`
        (default: the global provider's), linked to the run's span (see `llm_judge_trace`).
        """
        if names_only(run):
            return self.values_not_kept()
        if not (run.input or "").strip():
            return ScoreFailure(name=self.scorer_name, error_type="judge_missing_input", message="run.input is empty")
        try:
            if self.ignore_tools:
                run = run.model_copy(update={"calls": self.scored_calls(run.calls)})
            if not _IMPORTED:  # the first import takes seconds: keep it (and the wait for it) off the loop
                await asyncio.to_thread(_litellm)
            messages = build_messages(run, self.available_tools or _catalog(run))
            key = self._cache_key(messages)
            cached = self._state.cache.get(key)
            if cached is not None:
                return self._to_score(run, cached, attempts=0, cached=True)
            verdict, attempts = await self._judge(run, messages, tracer)
            self._state.cache.put(key, verdict)
            return self._to_score(run, verdict, attempts=attempts, cached=False)
        except _Failed as exc:
            return ScoreFailure(name=self.scorer_name, error_type=exc.error_type, message=str(exc))
        except Exception as exc:
            return ScoreFailure(name=self.scorer_name, error_type="judge_error", message=f"{type(exc).__name__}: {exc}")

    async def _judge(self, run: AgentRun, messages: list[dict[str, str]], tracer: Tracer | None) -> tuple[Verdict, int]:
        prompt, content = list(messages), None
        failure = _Failed("judge_error", "no attempt made")
        for attempt in range(1, self.max_retries + 2):
            if attempt > 1:
                await asyncio.sleep(self.backoff_s * 2 ** (attempt - 2) * random.uniform(0.5, 1.0))
            try:
                async with self._state.limiter:
                    with judge_span(
                        tracer,
                        model=self.model,
                        temperature=self.temperature,
                        api_base=self.api_base,
                        run=run,
                        attempt=attempt,
                        messages=prompt,
                    ) as span:
                        content = await self._complete(prompt, span)
                        return parse_verdict(content, run), attempt
            except MalformedVerdict as exc:
                failure = _Failed("judge_malformed_output", f"attempt {attempt}: {exc}")
                prompt = [*messages, *_correction(content, exc)]
            except Exception as exc:
                auth = self._auth_failure(exc, attempt)
                if auth is not None:
                    raise auth from None
                failure = _classify(exc, attempt, self.timeout_s)
                if failure.error_type == "judge_error" and not _retryable(exc):
                    raise failure from None
        raise failure

    async def _complete(self, messages: list[dict[str, str]], span: Span) -> str | None:
        litellm = _litellm()
        _log_through_the_application()
        kwargs: dict[str, Any] = {"timeout": self.timeout_s, "max_retries": 0, "num_retries": 0}
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self.api_key is not None:
            kwargs["api_key"] = self.api_key
        if _supports_json_mode(self.model):
            kwargs["response_format"] = {"type": "json_object"}
        call = litellm.acompletion(model=self.model, messages=messages, temperature=self.temperature, **kwargs)
        response = await asyncio.wait_for(call, timeout=self.timeout_s + 1.0)
        content = response.choices[0].message.content
        content = content if isinstance(content, str) else None
        record_response(span, response, content, _cost(litellm, response) if span.is_recording() else None)
        return content

    def _auth_failure(self, exc: Exception, attempt: int) -> _Failed | None:
        """`judge_auth` when `exc` says the key is missing or refused (retrying cannot help), else None."""
        missing = _MISSING_KEY.search(str(exc)) is not None
        if not (missing or isinstance(exc, _litellm().AuthenticationError) or _status(exc) == 401):
            return None
        if self.api_key is not None:
            fix = "check `api_key` in the judge's config"
        else:
            names = _key_variables(self.model)
            where = f"set {' or '.join(names)} in the environment" if names else "set the provider's key variable"
            fix = f"{where}, or `api_key` in the judge's config"
            if self.api_base is not None:
                fix += " (a server that needs no key still needs one given: any value)"
        what = "no API key" if missing else "the API key was refused"
        cause = f"HTTP {_status(exc)}" if _status(exc) is not None else type(exc).__name__
        said = str(exc).partition("\n")[0][:300]  # some providers' messages carry a traceback
        return _Failed("judge_auth", f"attempt {attempt}: {what} for {self.model}: {fix} ({cause}: {said})")

    def _cache_key(self, messages: list[dict[str, str]]) -> str:
        material = {"model": self.model, "api_base": self.api_base, "temperature": self.temperature, "m": messages}
        return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()

    def _to_score(self, run: AgentRun, verdict: Verdict, attempts: int, cached: bool) -> Score:
        missing = list(verdict.missing_tools)
        if run.calls:
            good = sum(ev.was_appropriate for ev in verdict.evaluations)
            value = good / len(run.calls)
            explanation = f"appropriate={good}/{len(run.calls)}, score={value:.3f}"
        else:
            value = 1.0 if verdict.no_tool_appropriate else 0.0
            needed = "no tool needed" if verdict.no_tool_appropriate else "a tool was needed"
            explanation = f"no tool calls; judge: {needed}, score={value:.3f}"
        if missing:
            explanation += f"; missing={','.join(missing)}"
        if verdict.reason:
            explanation += f"; {verdict.reason}"
        details = {
            "evaluations": [ev.model_dump() for ev in verdict.evaluations],
            "missing_tools": missing,
            "no_tool_appropriate": verdict.no_tool_appropriate,
            "reason": verdict.reason,
            "model": self.model,
            "attempts": attempts,
            "cached": cached,
        }
        return self._result(value, explanation, details)


def _correction(content: str | None, exc: MalformedVerdict) -> list[dict[str, str]]:
    """Show the judge its invalid reply and what was wrong: at temperature 0 a bare retry repeats it."""
    echoed = (content or "")[:_MAX_ECHO_CHARS]
    fix = f"That reply is invalid: {exc}. Reply again with only the JSON object, in the shape the system prompt gives."
    return [{"role": "assistant", "content": echoed}, {"role": "user", "content": fix}]


def _cost(litellm: Any, response: Any) -> float | None:
    """What litellm says the request cost in US dollars; None for a model it has no price for."""
    try:
        cost = litellm.completion_cost(completion_response=response)
    except Exception:
        return None
    return float(cost) if isinstance(cost, int | float) and cost > 0 else None


def _status(exc: Exception) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _retryable(exc: Exception) -> bool:
    status = _status(exc)
    return status is None or status in _RETRYABLE_STATUS


def _classify(exc: Exception, attempt: int, timeout_s: float) -> _Failed:
    if isinstance(exc, (TimeoutError, _litellm().Timeout)):
        return _Failed("judge_timeout", f"attempt {attempt}: no reply within {timeout_s:g}s")
    status = _status(exc)
    where = f"HTTP {status}" if status is not None else type(exc).__name__
    return _Failed("judge_error", f"attempt {attempt}: {where}: {str(exc)[:500]}")


def _key_variables(model: str) -> list[str]:
    """The environment variables litellm reads the model's key from and found unset (e.g. OPENAI_API_KEY)."""
    try:
        missing = _litellm().validate_environment(model=model).get("missing_keys") or []
    except Exception:
        return []
    return [name for name in missing if isinstance(name, str) and ("KEY" in name or "TOKEN" in name)]


@functools.lru_cache(maxsize=256)  # model strings come from expectations and `toolscore score` input: bounded
def _supports_json_mode(model: str) -> bool:
    """Whether to send `response_format=json_object`; unknown models get it when their provider takes it."""
    litellm = _litellm()
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        params = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider) or []
    except Exception:
        return False
    return "response_format" in params
