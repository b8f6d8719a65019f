"""Backend configs are checked before anything is built or written (issue 30, item 6): an
unknown key is named with the nearest known one, for every built-in backend, including those
that pass extra keys on (``embedded`` to ``hf``, ``vllm`` to ``vllm.LLM``)."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import pytest

from agentworld_envs.backends import make_backend, registry
from agentworld_envs.backends.registry import (
    BackendConfigError,
    BackendUnavailableError,
    check_backend_config,
)
from agentworld_envs.cli_errors import UnknownNameError
from tests.helpers.examples import HANG_GUARD_S

TYPOS = {
    "openai": ({"model": "m", "baseurl": "http://127.0.0.1:9/v1"}, "baseurl", "base_url"),
    "hf": ({"model": "smollm2", "devcie": "cpu"}, "devcie", "device"),
    "embedded": ({"adapter": "tools", "batchsize": 4}, "batchsize", "batch_size"),
    "replay": ({"path": "calls.jsonl", "modle": "m"}, "modle", "model"),
    "scripted": ({"rule": []}, "rule", "rules"),
}


@pytest.mark.parametrize("name", TYPOS)
def test_an_unknown_key_names_the_nearest_known_one(name: str) -> None:
    options, typo, nearest = TYPOS[name]
    with pytest.raises(BackendConfigError, match=(
            rf"^backend '{name}': unknown key '{typo}'; did you mean '{nearest}'\? \(its keys: ")):
        check_backend_config({"name": name, **options})
    with pytest.raises(BackendConfigError, match=f"unknown key '{typo}'"):
        make_backend({"name": name, **options})  # before the backend is built


def test_the_embedded_backend_takes_every_key_of_hf_and_nothing_heavy_loads() -> None:
    check = ("import sys; from agentworld_envs.backends import check_backend_config; "
             "check_backend_config({'name': 'embedded', 'adapter': 'tools', 'device': 'cpu', "
             "'batch_size': 4, 'greedy_memo': 0}); "
             "print(sorted({'torch', 'transformers'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, check=True)
    assert done.stdout.split() == ["[]"], done.stdout


def test_a_missing_key_and_an_unknown_name_are_refused() -> None:
    with pytest.raises(BackendConfigError, match="missing a required argument: 'model'"):
        check_backend_config({"name": "openai", "base_url": "http://127.0.0.1:9/v1"})
    with pytest.raises(UnknownNameError, match="did you mean 'openai'"):
        check_backend_config({"name": "opnai"})
    check_backend_config("oracle")


def _stand_in_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    """vllm's two signatures that take a config's extra keys (vllm is not installed here)."""
    vllm, engine, arg_utils = (ModuleType(n) for n in
                               ("vllm", "vllm.engine", "vllm.engine.arg_utils"))

    def llm(model: str, tokenizer: str | None = None, **kwargs: object) -> None: ...

    def engine_args(model: str = "", gpu_memory_utilization: float = 0.9,
                    max_model_len: int | None = None) -> None: ...

    vllm.LLM, arg_utils.EngineArgs = llm, engine_args
    for module in (vllm, engine, arg_utils):
        monkeypatch.setitem(sys.modules, module.__name__, module)


def test_vllm_keys_are_checked_against_llm_and_engine_args(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in_vllm(monkeypatch)
    check_backend_config({"name": "vllm", "model": "m", "tokenizer": "t",
                          "gpu_memory_utilization": 0.5})
    with pytest.raises(BackendConfigError, match="unknown key 'gpu_memory_utilisation'; did you "
                                                 "mean 'gpu_memory_utilization'"):
        check_backend_config({"name": "vllm", "model": "m", "gpu_memory_utilisation": 0.5})


def test_without_vllm_the_config_check_gives_the_install_hint(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    for config in ({"name": "vllm", "model": "m", "gpu_memory_utilization": 0.5},
                   {"name": "vllm", "model": "m", "gpu_memory_utilisation": 0.5}):
        with pytest.raises(BackendUnavailableError,
                           match=r"'vllm' cannot be built here: .*pip install \"agentworld\[vllm"):
            check_backend_config(config)


def test_a_factory_taking_any_keys_it_does_not_forward_is_not_second_guessed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def anything(model: str, **options: object) -> None: ...

    monkeypatch.setitem(registry._REGISTRY, "test-anything", anything)
    check_backend_config({"name": "test-anything", "model": "m", "whatever": 1})


def test_a_registered_backend_declares_its_sampling_and_the_env_starts_from_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld_envs.sim.config import WORLD_MODEL_SAMPLING, SimConfig

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_SAMPLING", dict(registry._SAMPLING))
    registry.register_backend("tuned", "agentworld_envs.backends.scripted:ScriptedBackend",
                              sampling={"temperature": 0.2, "max_tokens": 64})
    params = SimConfig(domain="mcp", backend={"name": "tuned"}).world_model_params()
    assert (params.temperature, params.max_tokens, params.top_p) == (0.2, 64, 1.0)
    config = SimConfig(domain="mcp", backend="tuned", sampling={"max_tokens": 9})
    params = config.world_model_params()
    assert (params.temperature, params.max_tokens) == (0.2, 9)
    registry.register_backend("tuned", "agentworld_envs.backends.scripted:ScriptedBackend")
    params = SimConfig(domain="mcp", backend="tuned").world_model_params()
    assert params.temperature == WORLD_MODEL_SAMPLING["temperature"]
    assert SimConfig(domain="mcp").world_model_params().max_tokens == 768  # the embedded model


def test_defaults_fill_only_the_keys_a_backend_takes_and_leaves_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from agentworld_envs.backends.scripted import ScriptedBackend

    built = []

    def timed(model: str = "m", timeout_s: float = 120.0) -> ScriptedBackend:
        built.append(timeout_s)
        return ScriptedBackend(model=model)

    monkeypatch.setattr(registry, "_REGISTRY", {**registry._REGISTRY, "timed": timed})
    make_backend("timed", {"timeout_s": 5.0})
    make_backend({"name": "timed", "timeout_s": 7.0}, {"timeout_s": 5.0})
    make_backend("timed", {"timeout_s": None})  # no default: the backend's own
    assert built == [5.0, 7.0, 120.0]
    assert isinstance(make_backend("scripted", {"timeout_s": 5.0}), ScriptedBackend)


def test_timing_only_settings_may_change_on_resume() -> None:
    """A resumed bench or ``wm rl`` run compares :func:`answering_settings`: the retry jitter's
    seed and a replica's cool-down change timing, never an answer."""
    from agentworld_envs.backends.registry import answering_settings

    config = {"name": "openai", "model": "m", "jitter_seed": 3, "replica_cooldown_s": 5.0,
              "backoff_s": 2.0, "max_reply_bytes": 10}
    assert answering_settings(config) == {"name": "openai", "model": "m", "max_reply_bytes": 10}
