"""The YAML sweep format: models × interventions × tasks × variants × repeats.

Each model, crossed with each named intervention when any are listed, is one *arm* with slug
``<model>`` or ``<model>+<intervention>``. An intervention overrides only the fields it sets; its
``extra`` is merged into the model's. ``thinking`` becomes ``chat_template_kwargs.enable_thinking``
in ``extra`` (the API parameters). :func:`expand` turns a config into one :class:`RunSpec` per
run, in a fixed order: arm, task, variant, repeat.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
    PrivateAttr,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from agentworld_envs.backends import SamplingParams
from agentworld_envs.backends.registry import check_backend_config
from agentworld_envs.cli_errors import nearest_names
from floor_tasks.harness.runner import SYSTEM_PROMPT, RunSettings
from floor_tasks.harness.yaml_limits import YAMLLimitError, line_of, load_yaml
from floor_tasks.task import TIERS

__all__ = [
    "SweepConfigError",
    "check_task_selector",
    "format_errors",
    "InterventionFields",
    "Intervention",
    "BackendSpec",
    "ModelSpec",
    "SweepConfig",
    "Arm",
    "RunSpec",
    "load_sweep",
    "resolve_tasks",
    "expand",
]

MAX_REPEATS = 1000
Slug = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$", max_length=100)]
"""A sweep, model or intervention name: at most 100 characters, and no ``|`` (run-id
separator), ``+`` (arm separator) or ``/``."""


class SweepConfigError(ValueError):
    """A sweep config cannot be read, or names tasks or variants that do not exist."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InterventionFields(_Strict):
    """What an arm changes about a run, besides the model."""

    system_prompt_suffix: str | None = None
    system_prompt_override: str | None = None
    max_steps_override: PositiveInt | None = None
    thinking: bool | None = None
    """True/False sends ``chat_template_kwargs.enable_thinking``; None sends nothing."""
    max_tokens: PositiveInt | None = None
    temperature: float = Field(0.0, ge=0.0, allow_inf_nan=False)
    seed: int = Field(0, ge=0)
    """Seeds the first repeat's env reset and sampling; repeat r gets ``seed + r``."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Merged into the API request parameters."""

    def run_settings(self) -> RunSettings:
        """How a run with these fields is played: its system prompt, sampling and step budget
        (``thinking`` goes to ``chat_template_kwargs.enable_thinking``; 512 tokens unless
        ``max_tokens`` says otherwise)."""
        prompt = self.system_prompt_override or SYSTEM_PROMPT
        if self.system_prompt_suffix:
            prompt = f"{prompt}\n{self.system_prompt_suffix}"
        extra = copy.deepcopy(self.extra)
        if self.thinking is not None:
            extra = _deep_merge(extra, {"chat_template_kwargs": {"enable_thinking": self.thinking}})
        sampling = SamplingParams(temperature=self.temperature, max_tokens=self.max_tokens or 512,
                                  seed=self.seed, extra=extra)
        return RunSettings(system_prompt=prompt, sampling=sampling,
                           max_steps=self.max_steps_override)


class Intervention(InterventionFields):
    """A named set of intervention fields that multiplies the models."""

    name: Slug


class BackendSpec(BaseModel):
    """Plain-data backend config, as :func:`agentworld_envs.backends.make_backend` takes it."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1)

    @model_validator(mode="after")
    def _fits_its_backend(self) -> BackendSpec:
        if "api_key" in (self.model_extra or {}):
            raise ValueError("do not put api_key in a sweep file; name a variable in api_key_env")
        check_backend_config(self.model_dump())  # before the sweep makes its folder
        return self


class ModelSpec(InterventionFields):
    """One model of the sweep: its slug, backend, size, prices and default settings."""

    name: Slug
    backend: BackendSpec
    params_b: PositiveFloat | None = None
    price_in_per_mtok: NonNegativeFloat | None = None
    price_out_per_mtok: NonNegativeFloat | None = None
    notes: str = ""


def _unique(names: Sequence[str], what: str) -> None:
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"duplicate {what}: {', '.join(repeated)}")


class SweepConfig(_Strict):
    """A sweep: which arms run which tasks and variants, how often, and where results go."""

    sweep_name: Slug
    description: str = ""
    results_dir: str = "runs"
    tasks: str | list[str] = "all"
    """``"all"``, ``"tier:A,B"``, or a list of task ids."""
    variants: Literal["all"] | list[str] = ["v0"]
    repeats: int = Field(1, ge=1, le=MAX_REPEATS)
    probe_before_run: bool = False
    models: list[ModelSpec] = Field(min_length=1)
    interventions: list[Intervention] = Field(default_factory=list)

    _source: Path | None = PrivateAttr(default=None)

    @field_validator("tasks", mode="before")
    @classmethod
    def _check_tasks(cls, value: Any) -> Any:
        return check_task_selector(value)

    @field_validator("variants", mode="before")
    @classmethod
    def _check_variants(cls, value: Any) -> Any:
        if value == "all":
            return value
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            raise ValueError("expected 'all' or a list of one or more variant names")
        _unique(value, "variants")
        return value

    @model_validator(mode="after")
    def _check_names(self) -> SweepConfig:
        _unique([m.name for m in self.models], "model names")
        _unique([i.name for i in self.interventions], "intervention names")
        return self

    def arms(self) -> list[Arm]:
        """Every model, crossed with every intervention when any are listed."""
        if not self.interventions:
            return [Arm.build(m) for m in self.models]
        return [Arm.build(m, i) for m in self.models for i in self.interventions]

    def price_table(self) -> dict[str, dict[str, float]]:
        """Per-arm token prices, for :func:`floor_tasks.harness.report.write_report`."""
        return {a.slug: a.prices for a in self.arms() if a.prices}

    def param_table(self) -> dict[str, float]:
        """Per-arm ``params_b``, for :func:`floor_tasks.harness.report.write_report`."""
        return {a.slug: a.params_b for a in self.arms() if a.params_b is not None}


def check_task_selector(value: Any) -> Any:
    """``value`` if it is ``"all"``, ``"tier:A,B"`` naming known tiers, or a list of task ids
    without repeats (whether each is a task's id is the caller's check).

    Raises:
        ValueError: saying what is wrong, in one line.
    """
    if isinstance(value, list):
        if not value or not all(isinstance(t, str) for t in value):
            raise ValueError("a task list must hold one or more task ids")
        _unique(value, "task ids")
    elif value != "all":
        if not isinstance(value, str) or not value.startswith("tier:"):
            raise ValueError("expected 'all', 'tier:A,B' or a list of task ids")
        unknown = [t for t in _tier_names(value) if t not in TIERS]
        if unknown or not _tier_names(value):
            what = f"unknown tier(s) {unknown}" if unknown else "no tier after 'tier:'"
            raise ValueError(f"{what}; tiers are {', '.join(TIERS)}")
    return value


def _tier_names(selector: str) -> list[str]:
    return [t.strip() for t in selector.removeprefix("tier:").split(",") if t.strip()]


def _deep_merge(base: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


_SETTINGS = set(InterventionFields.model_fields)


@dataclass(frozen=True)
class Arm:
    """One model under one intervention."""

    slug: str
    backend: dict[str, Any]
    settings: InterventionFields
    params_b: float | None
    prices: dict[str, float]

    @classmethod
    def build(cls, model: ModelSpec, intervention: Intervention | None = None) -> Arm:
        """Merge a model's settings with an intervention's overrides."""
        settings = model.model_dump(include=_SETTINGS)
        slug = model.name
        if intervention is not None:
            slug = f"{model.name}+{intervention.name}"
            override = intervention.model_dump(include=_SETTINGS, exclude_unset=True)
            extra = _deep_merge(settings["extra"], override.pop("extra", {}))
            settings.update(override, extra=extra)
        prices = {
            key: getattr(model, key)
            for key in ("price_in_per_mtok", "price_out_per_mtok")
            if getattr(model, key) is not None
        }
        return cls(slug, model.backend.model_dump(), InterventionFields.model_validate(settings),
                   model.params_b, prices)


@dataclass(frozen=True)
class RunSpec:
    """One run of a sweep."""

    model_slug: str
    backend: dict[str, Any]
    settings: InterventionFields
    task_id: str
    variant: str
    repeat: int

    @property
    def run_id(self) -> str:
        """The run record's id: ``<model>|<task_id>|<variant>|<repeat>``."""
        return f"{self.model_slug}|{self.task_id}|{self.variant}|{self.repeat}"


def format_errors(source: Path | str, exc: ValidationError, lines_of: Path | None = None) -> str:
    """One line per field error: ``<source>: <field.path>: <message>``, or
    ``<source>:<line>: ...`` with the YAML file ``lines_of`` the data was read from."""
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        at = f"{source}:{line_of(lines_of, error['loc'])}" if lines_of else f"{source}"
        lines.append(f"{at}: {where}: {message[:1].lower()}{message[1:]}")
    return "\n".join(lines)


def load_sweep(path: str | Path) -> SweepConfig:
    """Read and validate a YAML sweep file, within the limits of :mod:`.yaml_limits`.

    Raises:
        SweepConfigError: on an unreadable file, invalid YAML or YAML past a limit, or a schema
            error; the message names the file and each offending field path (e.g.
            ``models.0.backend: field required``), and the line where there is one.
    """
    source = Path(path)
    try:
        data = load_yaml(source)
    except OSError as exc:
        raise SweepConfigError(f"{source}: cannot read sweep config: {exc}") from None
    except YAMLLimitError as exc:
        raise SweepConfigError(str(exc)) from None
    if not isinstance(data, dict):
        raise SweepConfigError(f"{source}: a sweep config must be a YAML mapping")
    try:
        config = SweepConfig.model_validate(data)
    except ValidationError as exc:
        raise SweepConfigError(format_errors(source, exc, source)) from None
    config._source = source
    return config


def resolve_tasks(
    selector: str | Sequence[str], all_task_ids: Sequence[str], tier_of: Mapping[str, str]
) -> list[str]:
    """Resolve ``"all"``, ``"tier:A,B"`` or a list of ids to task ids.

    "all" and tier selectors keep the order of ``all_task_ids``; a list keeps its own order.

    Raises:
        SweepConfigError: naming any listed task id not in ``all_task_ids``.
    """
    if selector == "all":
        return list(all_task_ids)
    if isinstance(selector, str) and selector.startswith("tier:"):
        tiers = set(_tier_names(selector))
        return [t for t in all_task_ids if tier_of.get(t) in tiers]
    wanted = [selector] if isinstance(selector, str) else list(selector)
    unknown = [t for t in wanted if t not in all_task_ids]
    if unknown:
        raise SweepConfigError(f"unknown task id(s): {_hinted(unknown, all_task_ids)}")
    return wanted


def _hinted(unknown: Sequence[str], known: Sequence[str]) -> str:
    """The unknown names, each with the nearest known one (ignoring case) where there is one:
    ``a1 (did you mean A1?), Q9``."""
    hints = [nearest_names(name, known, 1) for name in unknown]
    return ", ".join(f"{name} (did you mean {hint[0]}?)" if hint else str(name)
                     for name, hint in zip(unknown, hints, strict=True))


def expand(
    config: SweepConfig,
    all_task_ids: Sequence[str],
    tier_of: Mapping[str, str],
    variants_of: Mapping[str, Sequence[str]],
) -> list[RunSpec]:
    """List every run of a sweep, ordered by arm, task, variant, repeat.

    A named variant runs on each selected task that has it, and must exist for at least one.

    Args:
        config: the sweep.
        all_task_ids: every known task id, in ladder order.
        tier_of: task id -> tier.
        variants_of: task id -> its variant names.

    Raises:
        SweepConfigError: naming unknown task ids, or variants that no selected task has.
    """
    prefix = f"{config._source}: " if config._source else ""
    try:
        tasks = resolve_tasks(config.tasks, all_task_ids, tier_of)
    except SweepConfigError as exc:
        raise SweepConfigError(f"{prefix}tasks: {exc}") from None
    if config.variants == "all":
        per_task = {t: list(variants_of.get(t, ())) for t in tasks}
    else:
        available = list(dict.fromkeys(v for t in tasks for v in variants_of.get(t, ())))
        unknown = [v for v in config.variants if v not in available]
        if unknown:
            raise SweepConfigError(f"{prefix}variants: no selected task has variant(s) "
                                   f"{_hinted(unknown, available)}; they have: "
                                   f"{', '.join(available)}")
        per_task = {t: [v for v in config.variants if v in variants_of.get(t, ())] for t in tasks}
    return [
        RunSpec(arm.slug, copy.deepcopy(arm.backend), arm.settings.model_copy(deep=True), t, v, r)
        for arm in config.arms()
        for t in tasks
        for v in per_task[t]
        for r in range(config.repeats)
    ]
