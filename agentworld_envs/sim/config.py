"""The settings of a simulated env: the keyword arguments of ``gym.make`` and ``gym.make_vec``.

Everything is plain data (names, dicts, numbers), so registered kwargs stay serialisable. Only
at the call site may ``backend`` or ``judge_backend`` be a live backend object.
"""

from __future__ import annotations

import os
import reprlib
import threading
from typing import TYPE_CHECKING, Any, Literal

import pydantic

from agentworld_envs.backends import Backend, SamplingParams
from agentworld_envs.backends.embedded import DEFAULT_WORLD_MODEL, default_world_model
from agentworld_envs.backends.registry import check_backend_config, declared_sampling
from agentworld_envs.cli_errors import UsageError, nearest_names, refused_value
from agentworld_envs.protocol.integers import check_int
from agentworld_envs.protocol.text_space import OBSERVATION_MAX_LENGTH
from agentworld_envs.world.prompt_sets import PromptSet, resolve_prompt_set
from agentworld_envs.world.scenario import Control, DomainKey, Scenario

if TYPE_CHECKING:
    from agentworld_envs.domains.base import Domain
    from agentworld_envs.world.reality import Reality

__all__ = ["CALL_TIMEOUT_S", "DEFAULT_BACKEND", "SimConfig", "SimConfigError",
           "WORLD_MODEL_SAMPLING", "step_budget"]

DEFAULT_BACKEND = None
"""No backend named: the domain's default world model
(:func:`~agentworld_envs.backends.embedded.default_world_model`), for the domains that ship an
adapter (floor, mcp); the others must name one."""
WORLD_MODEL_SAMPLING = {"temperature": 0.6, "top_p": 0.95, "top_k": 20, "max_tokens": 32768}
"""The Qwen-AgentWorld model card's sampling (thinking on; about 4.3K tokens a step)."""
JUDGE_SAMPLING = {"temperature": 0.0, "max_tokens": 2048}
CALL_TIMEOUT_S = 3600.0
"""Default wait for one batched world-model call: 32,768 tokens at ~10 tokens/s, with room."""

BackendConfig = str | dict[str, Any] | Backend
_BACKEND_FORMS = "a backend name, a backend config dict or a Backend, or None"


class SimConfigError(UsageError, ValueError):
    """A simulated env setting that is unknown, or a value it cannot take: one line naming the
    setting, what was given and what is allowed."""


class SimConfig(pydantic.BaseModel):
    """Settings shared by :class:`~agentworld_envs.sim.env.AgentWorldEnv` and the vector env.

    Attributes:
        domain: The domain key (``mcp``, ``search``, ``terminal``, ``swe``, ``android``, ``web``,
            ``os`` or ``floor``).
        backend: The world model: a backend name or config for ``make_backend`` (``openai``,
            ``hf``, ``vllm``, ``replay``, ``embedded``, ``scripted``), or a live backend at the
            call site. None (the default): the embedded model of the domain
            (:func:`~agentworld_envs.backends.embedded.default_world_model`) where it ships a
            fine-tuned adapter (floor, mcp); the other domains raise
            :class:`~agentworld_envs.backends.embedded.NoDefaultWorldModelError`, since the
            untrained base is not an environment.
        sampling: World-model ``SamplingParams`` fields over the model card's defaults
            (temperature 0.6, top_p 0.95, top_k 20, max_tokens 32768; ``top_k: None`` sends
            none, for servers that reject it), or over the backend's own where its
            registration declares some (the embedded models': greedy, max_tokens 768).
            The seed is always drawn from ``np_random``.
        prompts: The prompt set of the world model's system message: None (the
            ``AGENTWORLD_PROMPTS`` variable, else the built-in set), ``"builtin"``, or a
            directory laid out as the release's ``prompts/`` folder (checked at make time for
            the domain's prompt).
        judge_backend: The rubric judge's backend; None uses the world model's.
        judge_sampling: Judge ``SamplingParams`` fields (defaults: temperature 0,
            max_tokens 2048).
        reward: Where the reward's facts come from. ``simulated`` (default): the simulated
            episode alone, the actions and the observations the agent saw (for floor, the
            AgentFloor verifier over that trace), so the reward depends on what the world
            model said. ``real``: the real counterpart's episode (the shadow AgentFloor env,
            the MCP twin), an oracle for analysis; only where the scenario has one. Where it
            has, ``info["reward_breakdown"]`` also holds the other source's reward and
            whether the two ``agree``.
        reward_kind: Overrides the kind of every scenario's reward spec (``rule``,
            ``judge``, ``hybrid``).
        scenarios: ``builtin`` (the hand-written ones), ``generated`` (the domain's procedural
            generator, seeded from ``np_random``), or a list of scenario ids or dicts.
        controls: Control instructions added to every scenario's own.
        fictional: Forces fictional-world mode on or off; None follows each scenario.
        record_path: Records every model call to this JSONL request cache, a str or path (and
            serves repeats from it), so a run can be replayed with
            ``{"name": "replay", "path": ...}``.
        timeout_s: Longest wait for one batched model call (default one hour, sized for long
            thinking); None waits forever. A backend given by name or config that takes a
            ``timeout_s`` (``openai``) and sets none gets an equal share of it per attempt
            (``timeout_s / (max_retries + 1)``), so a stalled attempt is retried within the
            call's time. At most ``threading.TIMEOUT_MAX`` (about 292 years).
        on_fault: ``report`` (default): a world-model fault (dead server, timeout, error, an
            answer that is not text) gives a flagged fallback observation
            (``info["observation_source"] == "fallback"``) and a ``RuntimeWarning``, and the
            episode goes on; a judge fault, reward 0 marked ``reward_breakdown["judge_fault"]``
            and the same warning; ``raise``: the step raises
            :class:`~agentworld_envs.sim.model_client.WorldModelFault` after finishing.
        max_faults: Failed model calls (world model and judge, counted in the simulator's
            ``faults``) to go on after: one more makes the step raise
            :class:`~agentworld_envs.backends.faults.TooManyFaultsError` after finishing.
            None (default) or -1 (the ``--max-faults`` flags' "never"): never stop.
        max_observation_chars: World-model observations are cut to this length (flagged).
        max_action_chars: Longer actions are rejected as invalid without a model call.
        mode: ``simulated``; ``hybrid`` or ``real`` for scenarios with a real counterpart
            (``floor``, generated ``mcp`` servers): in hybrid mode the agent sees the real
            observation when the prediction is unusable or when the action calls one of
            ``real_tools``; in real mode every observation is the real counterpart's and no world
            model is built or asked (the same env, prompt, candidates and reward, played for real:
            the evaluation target of a policy trained in simulation). A judged reward then needs
            ``judge_backend``.
        real_tools: Tools served by the real environment in hybrid mode.
        decided_tools: Tools whose outcome the real environment decides in every mode (the
            floor domain's ``submit_decision``): the agent sees the real answer, so acceptance
            never rests on the world model, which is not told the acceptance rule. With no real
            counterpart the domain's rule decides them over the simulated episode (floor), as
            ``decided_by`` says.
        decided_by: With no real counterpart, what a decided tool's outcome follows (floor):
            ``shown``, the task's rule over the values the simulation showed (a simulator's
            statuses are its world, so one that shows them inverted pays the inverted branch
            and teaches the true rule on relabelled records), or ``scenario``, the scenario's
            own expectation, from the records it holds (what the world model's notes hold):
            a simulator must then show those records right, and one that shows a status
            inverted pays the branch the shown status does not call for.
        real_counterpart: Build the scenario's real counterpart (the shadow AgentFloor env,
            the MCP twin) and play every action on it too, for fidelity, the other reward and
            the decided tools. False builds and touches nothing real: the episode and its
            reward are the simulation's alone (``mode`` and ``reward`` must be ``simulated``).
        reveal_reference: Put what only the evaluator should know into ``info``: the
            scenario's hidden fields in the reset info as ``info["reference"]`` (``solution``,
            ``reference_answer``, ``world``), the real observation of every step of a domain
            with a real counterpart as ``info["real_observation"]`` (without the flag it is
            there only when it is the observation the agent got), and the expected values in
            the labels of ``info["reward_breakdown"]``. Off by default: an agent must not be
            able to read the answer, or bypass the world model, through ``info``.
    """

    model_config = pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    # a union's description is what a refused value is told it must be (one line, not each
    # of its forms' refusals)
    domain: DomainKey
    backend: BackendConfig | None = pydantic.Field(DEFAULT_BACKEND, description=_BACKEND_FORMS)
    sampling: dict[str, Any] = {}
    prompts: str | None = None
    judge_backend: BackendConfig | None = pydantic.Field(None, description=_BACKEND_FORMS)
    judge_sampling: dict[str, Any] = {}
    reward: Literal["simulated", "real"] = "simulated"
    reward_kind: Literal["rule", "judge", "hybrid"] | None = None
    scenarios: Literal["builtin", "generated"] | list[str | dict[str, Any] | Scenario] = \
        pydantic.Field("builtin", description="'builtin', 'generated', or a list of scenario "
                                              "ids, dicts or Scenario objects")
    controls: list[Control] = []
    fictional: bool | None = None
    record_path: str | None = None
    timeout_s: float | None = pydantic.Field(CALL_TIMEOUT_S, gt=0)
    on_fault: Literal["report", "raise"] = "report"
    max_faults: int | None = pydantic.Field(None, ge=-1)
    max_observation_chars: int = pydantic.Field(65536, ge=64, le=OBSERVATION_MAX_LENGTH // 2)
    max_action_chars: int = pydantic.Field(65536, ge=1)
    mode: Literal["simulated", "hybrid", "real"] = "simulated"
    real_tools: list[str] = ["submit_decision"]
    decided_tools: list[str] = ["submit_decision"]
    real_counterpart: bool = True
    decided_by: Literal["shown", "scenario"] = "shown"
    reveal_reference: bool = False

    def __init__(self, /, **settings: Any) -> None:
        """Raises :class:`SimConfigError` (a ``ValueError``) for an unknown setting or a bad
        value."""
        try:
            super().__init__(**settings)
        except pydantic.ValidationError as exc:
            raise SimConfigError(_refusal(exc, settings)) from None

    @pydantic.model_validator(mode="after")
    def _simulated_without_counterpart(self) -> SimConfig:
        if not self.real_counterpart and "real" in (self.mode, self.reward):
            raise ValueError('real_counterpart=False plays nothing real: it needs '
                             'mode="simulated" and reward="simulated"')
        return self

    @pydantic.field_validator("backend", "judge_backend")
    @classmethod
    def _buildable_backend(cls, value: BackendConfig | None) -> BackendConfig | None:
        # its name, keys and values, before anything is built: a bad one named by its setting
        if isinstance(value, str | dict):
            check_backend_config(value)
        return value

    @pydantic.field_validator("sampling", "judge_sampling")
    @classmethod
    def _known_sampling_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = (set(value) - set(SamplingParams.__dataclass_fields__)) | ({"seed"} & set(value))
        if unknown:
            raise ValueError(f"unsupported sampling fields {sorted(unknown)} (the seed always "
                             "comes from the env's np_random)")
        SamplingParams(**value)  # values no backend can honour fail here, naming the field
        return value

    @pydantic.field_validator("prompts", "record_path", mode="before")
    @classmethod
    def _path_as_text(cls, value: Any) -> Any:
        return os.fspath(value) if isinstance(value, os.PathLike) else value

    @pydantic.field_validator("record_path")
    @classmethod
    def _names_a_file(cls, value: str | None) -> str | None:
        if value == "":  # recorded nothing, without a word
            raise ValueError("must name a file (None records nothing), got ''")
        return value

    @pydantic.field_validator("timeout_s", "max_faults", "max_observation_chars",
                              "max_action_chars", mode="before")
    @classmethod
    def _number_not_bool(cls, value: Any) -> Any:
        # pydantic reads True as 1: a one-character or one-second limit nobody asked for
        if isinstance(value, bool):
            raise ValueError(f"must be a number, got {value!r}")
        return value

    @pydantic.field_validator("timeout_s")
    @classmethod
    def _waitable_timeout(cls, value: float | None) -> float | None:
        # a longer wait overflows the worker thread's, failing every call
        if value is not None and not value <= threading.TIMEOUT_MAX:
            raise ValueError(f"timeout_s must be at most {threading.TIMEOUT_MAX:g} s; pass None "
                             "to wait forever")
        return value

    @pydantic.model_validator(mode="after")
    def _prompt_set_serves_the_domain(self) -> SimConfig:
        # a missing directory, or one without this domain's prompt, fails at make time
        self.prompt_set().system_prompt(self.domain)
        return self

    def prompt_set(self) -> PromptSet:
        """The prompt set the ``prompts`` setting names."""
        return resolve_prompt_set(self.prompts)

    def world_model_backend(self) -> BackendConfig:
        """The backend config: the named one, else the domain's default world model."""
        return default_world_model(self.domain) if self.backend is None else self.backend

    def world_model_params(self) -> SamplingParams:
        """World-model sampling parameters, without a seed: ``sampling`` over the backend's
        declared defaults, else over the model card's."""
        declared = declared_sampling(DEFAULT_WORLD_MODEL if self.backend is None
                                     else self.backend)
        return _sampling({**(declared or WORLD_MODEL_SAMPLING), **self.sampling})

    def judge_params(self) -> SamplingParams:
        """Judge sampling parameters, without a seed."""
        return _sampling({**JUDGE_SAMPLING, **self.judge_sampling})

    def reality(self, domain: Domain, scenario: Scenario, budget: int) -> Reality | None:
        """The scenario's real counterpart where ``real_counterpart`` builds one and it has one;
        a ValueError when ``mode`` or ``reward`` is ``real`` and there is none."""
        reality = domain.start_reality(scenario, budget) if self.real_counterpart else None
        if reality is None and "real" in (self.reward, self.mode):
            setting = "reward" if self.reward == "real" else "mode"
            raise ValueError(f'{setting}="real" needs a real counterpart, and {domain.key} '
                             f"scenario {scenario.id} has none")
        return reality


def step_budget(value: Any, name: str) -> int | None:
    """``value`` as a step budget: None (not given) or an integer >= 1; a ``ValueError`` naming
    ``name`` otherwise."""
    return None if value is None else check_int(name, value, 1)


def _refusal(exc: pydantic.ValidationError, settings: dict[str, Any]) -> str:
    """``exc``'s failures in one line: the unknown settings with the nearest known names, then
    each bad value with its setting, what was given and what is allowed."""
    known = sorted(set(SimConfig.model_fields) - {"domain"})  # the env id sets the domain
    unknown = sorted(e["loc"][0] for e in exc.errors() if e["type"] == "extra_forbidden")
    problems = []
    if unknown:
        close = [match for name in unknown for match in nearest_names(name, known, 1)]
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        problems.append(f"unknown AgentWorld env setting(s) {unknown}{hint}; known: {known}")
    described = set()
    for error in exc.errors():
        loc = error["loc"]
        if error["type"] == "extra_forbidden" or (loc and loc[0] in described):
            continue
        description = loc and SimConfig.model_fields[loc[0]].description
        if description and error["type"] != "value_error":  # one line for a union's forms
            described.add(loc[0])
            problems.append(f"AgentWorld env setting {loc[0]}: must be {description}, got "
                            f"{reprlib.repr(settings[loc[0]])}")
        else:
            problems.append(f"AgentWorld env setting {_path(loc)}: {refused_value(error)}"
                            if loc else refused_value(error))
    return "; ".join(problems)


def _path(loc: tuple[int | str, ...]) -> str:
    """A setting's error location as written in Python: ``controls[0].probability``."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)[1:]


def _sampling(fields: dict[str, Any]) -> SamplingParams:
    if "stop" in fields:
        fields = {**fields, "stop": tuple(fields["stop"])}
    return SamplingParams(**fields)
