"""An exception inside one AsyncVectorEnv worker reaches the user as itself; close() then works.

Gymnasium's worker pickles the exception into a queue and the parent re-raises
``type(instance)(instance)``: an exception class whose constructor needs more than the message
came back as a ``TypeError`` instead, and ``close()`` then waited forever. So every exception
type of the suite must survive both, fields included (:class:`agentworld_envs.errors.
FieldedError` does it for those with fields); these tests find every type by walking the
packages. (After a worker error gymnasium itself leaves the vector env unusable: a further
``step`` fails with ``AttributeError: 'NoneType' object has no attribute 'send'``; only
``close()`` is supported then.)

An error from outside the suite may not survive the trip at all (a library's exception whose
constructor needs two arguments, one that holds a lock): the suite's envs send such an error as
a :class:`~agentworld_envs.errors.SubEnvError` with its name, message and traceback, and so does
:func:`agentworld_envs.async_worker.async_worker` for anything else a worker runs.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pickle
import pkgutil
import re
import threading
import warnings
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import floor_tasks  # noqa: F401 - registers AgentFloor/<ID>-v0
from agentworld_envs.async_worker import async_worker
from agentworld_envs.backends import BackendError
from agentworld_envs.errors import SubEnvError
from agentworld_envs.registration import env_id
from agentworld_envs.sim.model_client import WorldModelFault
from floor_tasks.env import FloorEnv
from floor_tasks.tools import ToolFailure
from team_envs.core import ResetNeeded

ENV_ID = "AgentFloorTest/ChokingA1-v0"

FAULTS: dict[str, Exception] = {
    "raise RuntimeError": RuntimeError("env choked on the answer"),
    "raise BackendError": BackendError("server at http://127.0.0.1:9/v1 returned HTTP 503"),
    "raise team ResetNeeded": ResetNeeded("reset() needs to be called before step()"),
    "raise gymnasium ResetNeeded": gymnasium.error.ResetNeeded("call reset() before step()"),
    "raise ToolFailure": ToolFailure("error", "not_found", "no record P999", hint="list them"),
}


class ChokingFloorEnv(FloorEnv):
    """AgentFloor task A1, except that an action naming one of :data:`FAULTS` raises it, and
    ``"foreign <name>"`` raises a new error of :data:`FOREIGN` (from outside the suite's step)."""

    def step(self, action: str) -> tuple:
        if action in FAULTS:
            raise FAULTS[action]
        if action.removeprefix("foreign ") in FOREIGN:
            raise FOREIGN[action.removeprefix("foreign ")]()
        return super().step(action)


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point=ChokingFloorEnv, kwargs={"task_id": "A1"},
                       max_episode_steps=8)


def _async_vec() -> gymnasium.vector.VectorEnv:
    # shared_memory=False: a str cannot be a view of gymnasium's shared buffer (see below).
    return gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="async",
                              vector_kwargs={"shared_memory": False})


@pytest.mark.parametrize("action", FAULTS)
def test_the_worker_error_reaches_the_user_and_close_works(action: str) -> None:
    fault = FAULTS[action]
    envs = _async_vec()
    try:
        observations, _ = envs.reset(seed=0)
        assert all(isinstance(o, str) and o for o in observations)
        with warnings.catch_warnings(record=True) as logged, \
                pytest.raises(type(fault), match=re.escape(str(fault))) as raised:
            warnings.simplefilter("always")
            envs.step((action, "I do not know."))
        assert any("error from Worker-0" in str(w.message) for w in logged)
        assert vars(raised.value) == vars(fault)
    finally:
        assert _closes(envs)


def test_a_healthy_async_vector_env_matches_the_sync_one() -> None:
    sync = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync")
    envs = _async_vec()
    try:
        assert envs.reset(seed=3)[0] == sync.reset(seed=3)[0]
        actions = ('{"name": "lookup_record", "arguments": {"record_id": "P104"}}', "no idea")
        stepped, expected = envs.step(actions), sync.step(actions)
        assert stepped[0] == expected[0]
        assert (stepped[1] == expected[1]).all() and (stepped[2] == expected[2]).all()
    finally:
        envs.close()
        sync.close()


def test_shared_memory_is_refused_with_the_way_out_not_silently_stale() -> None:
    """Gymnasium reads a shared text buffer once: UnicodeText refuses it instead of going stale."""
    with pytest.raises(ValueError, match="shared_memory=False") as raised:
        gymnasium.make_vec("AgentFloor/A1-v0", num_envs=2, vectorization_mode="async")
    assert "vector_kwargs={'shared_memory': False}" in str(raised.value.__cause__)


PACKAGES = ("agentworld_envs", "floor_tasks", "team_envs", "trainers")
SAMPLES: dict[str, Any] = {  # a value for a constructor parameter, by what its annotation names
    "Path": Path("runs.jsonl"), "list": [1, 2], "Collection": ["alpha", "beta"],
    "float": 2.5, "int": 7,
}


def _error_types() -> dict[str, type[BaseException]]:
    """Every exception class defined in the suite's packages, every module imported."""
    found: dict[str, type[BaseException]] = {}
    for package in PACKAGES:
        root = importlib.import_module(package)
        for module_info in pkgutil.walk_packages(root.__path__, f"{package}."):
            for value in vars(importlib.import_module(module_info.name)).values():
                if (isinstance(value, type) and issubclass(value, BaseException)
                        and value.__module__.partition(".")[0] in PACKAGES):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def _sample(cls: type[BaseException]) -> BaseException:
    """An instance with a value for each of its constructor's parameters."""
    if not inspect.isfunction(cls.__init__):  # the builtin constructor: a message
        return cls("what went wrong")
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        value = next((v for k, v in SAMPLES.items() if k in str(parameter.annotation)),
                     f"{parameter.name} value")
        if parameter.kind is parameter.VAR_KEYWORD:
            kwargs["extra_field"] = value
        elif parameter.kind is parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = value
        elif parameter.kind is not parameter.VAR_POSITIONAL:
            args.append(value)
    return cls(*args, **kwargs)


def test_every_error_type_survives_the_trip_back_from_a_worker() -> None:
    """What AsyncVectorEnv does with a worker's error: pickle it, then raise ``type(e)(e)``."""
    types = _error_types()
    assert {"WorldModelFault", "CorruptCorpusError", "OpenAIRequestError", "ConfigError"} <= {
        cls.__name__ for cls in types.values()}
    broken = []
    for name, cls in types.items():
        error = _sample(cls)
        for way, copy in (("pickle", pickle.loads(pickle.dumps(error))), ("reraise", cls(error))):
            if (type(copy), str(copy), vars(copy)) != (cls, str(error), vars(error)):
                broken.append(f"{name} ({way})")
    assert broken == []


def _closes(envs: gymnasium.vector.VectorEnv) -> bool:
    """Close ``envs``; False if close() is still running after 600 s (a hang guard only)."""
    closer = threading.Thread(target=envs.close, daemon=True)
    closer.start()
    closer.join(timeout=600)
    return not closer.is_alive() and envs.closed


@pytest.mark.parametrize("on_fault", ["raise", "report"])
def test_a_world_model_fault_in_one_worker(on_fault: str) -> None:
    backend = {"name": "scripted", "rules": [{"match": "boom", "error": "GPU on fire"},
                                             {"match": ".", "reply": "[1] a page"}]}
    envs = gymnasium.make_vec(env_id("search"), num_envs=2, vectorization_mode="async",
                              vector_kwargs={"shared_memory": False}, backend=backend,
                              on_fault=on_fault)
    actions = tuple(json.dumps({"name": "web_search", "arguments": {"queries": [query]}})
                    for query in ("boom", "tea"))
    try:
        envs.reset(seed=0)
        if on_fault == "raise":
            with warnings.catch_warnings(), pytest.raises(WorldModelFault) as raised:
                warnings.simplefilter("ignore")
                envs.step(actions)
            assert "GPU on fire" in str(raised.value) and raised.value.faults == [0]
            assert raised.value.results[0].info["world_model"]["fault"] == "backend_error"
        else:  # reported in the worker (its warning stays there) and in the step's info
            observations, _, _, _, info = envs.step(actions)
            assert "GPU on fire" in observations[0] and observations[1] == "[1] a page"
            assert list(info["world_model"]["fault"]) == ["backend_error", ""]
    finally:
        assert _closes(envs)


class TwoFields(Exception):
    """A library-style error whose constructor needs two arguments (its pickle cannot be
    loaded: the class is called with the message alone)."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(f"{code}: {reason}")
        self.code, self.reason = code, reason


class HoldsALock(Exception):
    """An error that cannot be pickled at all (Gymnasium's parent once waited for it forever)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


FOREIGN: dict[str, Any] = {
    "json": lambda: json.JSONDecodeError("Expecting value", "{oops", 1),
    "unicode": lambda: UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
    "two-fields": lambda: TwoFields(503, "upstream gone"),
    "lock": lambda: HoldsALock("the store is locked"),
}
FOREIGN_ENV_ID = "AgentFloorTest/ForeignFaultA1-v0"


class _RaisingToolkit:
    """A floor toolkit whose lookup of a record named in :data:`FOREIGN` raises that error."""

    def __init__(self, toolkit: Any) -> None:
        self._toolkit = toolkit

    def dispatch(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        fault = FOREIGN.get(str(call.arguments.get("record_id")))
        if fault is not None:
            raise fault()
        return self._toolkit.dispatch(call, *args, **kwargs)


class ForeignFaultFloorEnv(FloorEnv):
    """AgentFloor A1 whose tools raise foreign errors from inside ``FloorEnv.step``."""

    def reset(self, **kwargs: Any) -> tuple:
        observation, info = super().reset(**kwargs)
        self._toolkit = _RaisingToolkit(self._toolkit)
        return observation, info


if FOREIGN_ENV_ID not in gymnasium.registry:
    gymnasium.register(FOREIGN_ENV_ID, entry_point=ForeignFaultFloorEnv,
                       kwargs={"task_id": "A1"}, max_episode_steps=8)


def _lookup(record_id: str) -> str:
    return json.dumps({"name": "lookup_record", "arguments": {"record_id": record_id}})


def _step_raising(envs: gymnasium.vector.VectorEnv, actions: tuple[str, ...]) -> BaseException:
    """What ``envs.step(actions)`` raised; the step runs under a 600 s hang guard."""
    outcome: list[BaseException] = []

    def step() -> None:
        try:
            envs.step(actions)
        except BaseException as error:  # noqa: BLE001 - the error is the result
            outcome.append(error)

    stepper = threading.Thread(target=step, daemon=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gymnasium logs the worker's traceback as warnings
        stepper.start()
        stepper.join(timeout=600)
    assert not stepper.is_alive(), "step() still waiting for the worker's error after 600 s"
    assert outcome, "step() returned although a sub-env raised"
    return outcome[0]


def _assert_delivered(raised: BaseException, original: BaseException, raiser: str) -> None:
    """``raised`` is ``original`` moved across as a SubEnvError, nothing of it lost."""
    cls = type(original)
    assert isinstance(raised, SubEnvError), repr(raised)
    # the module's dotted name depends on how pytest imported this file ("tests.x" or "x")
    assert raised.error_type.endswith(f"{cls.__module__.rpartition('.')[2]}.{cls.__qualname__}")
    assert raised.message == str(original) and str(original) in str(raised)
    assert raiser in raised.traceback and raised.traceback.startswith("Traceback")


@pytest.mark.parametrize("fault", FOREIGN)
def test_a_foreign_error_in_a_suite_env_reaches_the_caller_and_close_returns(fault: str
                                                                              ) -> None:
    """Gymnasium's own worker: before, a TypeError without the message, or a step that
    never returned (the unpicklable error)."""
    envs = gymnasium.make_vec(FOREIGN_ENV_ID, num_envs=2, vectorization_mode="async",
                              vector_kwargs={"shared_memory": False})
    try:
        envs.reset(seed=0)
        raised = _step_raising(envs, (_lookup("P104"), _lookup(fault)))
        _assert_delivered(raised, FOREIGN[fault](), "in dispatch")
    finally:
        assert _closes(envs)


@pytest.mark.parametrize("fault", FOREIGN)
def test_the_worker_sends_any_env_s_foreign_error(fault: str) -> None:
    """An env step outside the suite's (no boundary of ours): the worker moves its error."""
    envs = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="async", vector_kwargs={
        "shared_memory": False, "worker": async_worker})
    try:
        envs.reset(seed=0)
        raised = _step_raising(envs, ("I do not know.", f"foreign {fault}"))
        _assert_delivered(raised, FOREIGN[fault](), "in step")
    finally:
        assert _closes(envs)


def test_the_worker_leaves_errors_that_survive_as_they_are() -> None:
    envs = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="async", vector_kwargs={
        "shared_memory": False, "worker": async_worker})
    try:
        envs.reset(seed=0)
        raised = _step_raising(envs, ("raise ToolFailure", "I do not know."))
        assert type(raised) is ToolFailure and vars(raised) == vars(FAULTS["raise ToolFailure"])
    finally:
        assert _closes(envs)
