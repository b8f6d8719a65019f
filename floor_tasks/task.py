"""Task definitions: the package-data YAML files under ``floor_tasks/tasks/``, as pydantic models.

A task has prompt variants and instances. Prompts, checks and solutions are templates whose
``$name`` placeholders are filled from an instance; a placeholder that is a whole string takes the
instance value with its type (so ``$total`` can become the number 96). Variants are the prompt
variants ``v0..vN`` on the canonical instance, then the instance variants ``i1..iM``, each with
the first prompt. ``i<M>v<N>`` names instance ``M`` (``i0`` the canonical one) with prompt
``N``: a variant outside :attr:`Task.variant_names`, for splits that pair every instance with
every wording.
"""

from __future__ import annotations

import functools
import operator
import re
import string
from importlib import resources
from typing import Any, Literal

import pydantic
import yaml

from agentworld_envs.protocol.integers import is_integer

__all__ = ["Task", "Variant", "Check", "TIERS", "TIER_NAMES", "is_registered", "load_task",
           "load_tasks", "fill", "register_task"]

TIERS = ("A0", "A", "B", "C", "D", "E")
TIER_NAMES = {
    "A0": "instruction following",
    "A": "single tool call",
    "B": "sequential chaining",
    "C": "conditional branching",
    "D": "multi-source reasoning",
    "E": "long-horizon planning",
}


def fill(template: Any, params: dict[str, Any]) -> Any:
    """Fill ``$name`` placeholders in a nested structure from ``params``."""
    if isinstance(template, str):
        if template.startswith("$") and template[1:] in params:
            return params[template[1:]]
        return string.Template(template).substitute(params) if "$" in template else template
    if isinstance(template, dict):
        return {fill(k, params): fill(v, params) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, params) for v in template]
    return template


class Check(pydantic.BaseModel):
    """One named check with its parameters, e.g. ``{check: must_call, tools: [...]}``."""

    model_config = pydantic.ConfigDict(extra="allow", frozen=True)
    check: str

    @property
    def params(self) -> dict[str, Any]:
        """The check's parameters (everything but its name)."""
        return dict(self.model_extra or {})


class SubmissionSpec(pydantic.BaseModel):
    """What an accepted submission must hold: literal fields, or a named rule."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    expect: dict[str, Any] | None = None
    """Field values the submission must carry; a list gives accepted alternatives."""
    rule: Literal["bundle", "consistent_deployment"] | None = None
    params: dict[str, Any] = {}


class Step(pydantic.BaseModel):
    """One assistant turn of a reference solution: tool calls, or a final answer."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    call: dict[str, Any] | None = None
    calls: list[dict[str, Any]] | None = None
    answer: str | None = None


class Task(pydantic.BaseModel):
    """One AgentFloor task."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
    id: str
    tier: Literal["A0", "A", "B", "C", "D", "E"]
    title: str
    skill: str
    tools: list[str]
    max_steps: int = pydantic.Field(ge=1)
    repair_turns: int = pydantic.Field(0, ge=0)
    """Malformed calls tolerated, each corrected by the next call to the same tool."""
    fixture: str | None = None
    prompts: list[str] = pydantic.Field(min_length=5)
    instances: list[dict[str, Any]] = pydantic.Field(default_factory=lambda: [{}], min_length=1)
    answer: Check | None = None
    submission: SubmissionSpec | None = None
    trajectory: list[Check] = []
    forbidden: list[Check] = []
    solution: list[Step] = pydantic.Field(min_length=1)
    _variants: dict[int | str, Variant] = pydantic.PrivateAttr(default_factory=dict)

    @property
    def variant_names(self) -> list[str]:
        """Names of all variants: ``v0..`` (prompt variants) then ``i1..`` (instances)."""
        return ([f"v{k}" for k in range(len(self.prompts))]
                + [f"i{k}" for k in range(1, len(self.instances))])

    def variant(self, key: int | str = 0) -> Variant:
        """The variant with this index into :attr:`variant_names`, or this name."""
        if not isinstance(key, str) and not is_integer(key):
            raise ValueError(f"task {self.id}: a variant is a name or an index, not {key!r}")
        key = key if isinstance(key, str) else operator.index(key)
        if key not in self._variants:
            self._variants[key] = self._build_variant(key)
        return self._variants[key]

    def _build_variant(self, key: int | str) -> Variant:
        names = self.variant_names
        crossed = re.fullmatch(r"i(\d+)v(\d+)", key) if isinstance(key, str) else None
        if crossed:
            instance_index, prompt_index = map(int, crossed.groups())
            if instance_index >= len(self.instances) or prompt_index >= len(self.prompts):
                raise ValueError(f"task {self.id} has instances i0..i{len(self.instances) - 1} "
                                 f"and prompts v0..v{len(self.prompts) - 1}, not {key!r}")
            return self._variant(key, len(names) + instance_index * len(self.prompts)
                                 + prompt_index, prompt_index, instance_index)
        if isinstance(key, str):
            if key not in names:
                raise ValueError(f"task {self.id} has no variant {key!r}; it has {names}")
            key = names.index(key)
        if not 0 <= int(key) < len(names):
            raise ValueError(f"task {self.id} has variants 0..{len(names) - 1}, not {key}")
        key = int(key)
        prompt_index, instance_index = (key, 0) if key < len(self.prompts) else (
            0, key - len(self.prompts) + 1)
        return self._variant(names[key], key, prompt_index, instance_index)

    def _variant(self, name: str, index: int, prompt_index: int, instance_index: int) -> Variant:
        """One instance with one prompt (a crossed variant's index lies past the named ones)."""
        return Variant(task=self, name=name, index=index,
                       params=dict(self.instances[instance_index]),
                       prompt=fill(self.prompts[prompt_index], self.instances[instance_index]))


class Variant(pydantic.BaseModel):
    """A task with one prompt and one instance fixed: what a single episode plays."""

    model_config = pydantic.ConfigDict(frozen=True)
    task: Task
    name: str
    index: int
    params: dict[str, Any]
    prompt: str

    def filled(self, spec: Any) -> Any:
        """Fill a task template with this variant's instance values."""
        return fill(spec, self.params)


_REGISTERED: dict[str, Task] = {}
"""Tasks made at run time (:mod:`floor_tasks.generated`), by id; never in the ladder."""


def register_task(task: Task) -> None:
    """Make ``load_task(task.id)`` return ``task``: a task derived from a packaged one (more
    instances), which :func:`load_tasks` does not list. An id a packaged task has is refused."""
    if (resources.files("floor_tasks") / "tasks" / f"{task.id}.yaml").is_file():
        raise ValueError(f"{task.id} is a packaged AgentFloor task; a derived task needs its "
                         "own id")
    _REGISTERED[task.id] = task


def load_task(task_id: str) -> Task:
    """Load one task by id, e.g. ``"C3"`` (or a registered one, :func:`register_task`; a
    generated one is registered again from its id in a process that has not,
    :func:`floor_tasks.generated.regenerate`)."""
    if task_id not in _REGISTERED and task_id.startswith("C1_g"):
        from floor_tasks.generated import regenerate

        regenerate(task_id)
    return _REGISTERED[task_id] if task_id in _REGISTERED else _packaged_task(task_id)


def is_registered(task_id: str) -> bool:
    """Whether :func:`register_task` registered ``task_id`` in this process."""
    return task_id in _REGISTERED


@functools.cache
def _packaged_task(task_id: str) -> Task:
    path = resources.files("floor_tasks") / "tasks" / f"{task_id}.yaml"
    if not path.is_file():
        raise KeyError(f"unknown AgentFloor task {task_id!r}")
    try:
        return Task.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except (pydantic.ValidationError, yaml.YAMLError) as exc:
        raise ValueError(f"invalid task file {path}: {exc}") from exc


def load_tasks() -> list[Task]:
    """All tasks, in ladder order (A01..A05, A1..A5, B1.., ..., E5)."""
    folder = resources.files("floor_tasks") / "tasks"
    ids = [p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml")]
    tasks = [load_task(i) for i in ids]
    return sorted(tasks, key=lambda t: (TIERS.index(t.tier), t.id))
