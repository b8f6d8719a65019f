"""Failed model calls are never silent: every command whose result rests on them ends with
status 1 and one line that counts them and says why, stops past its fault budget, and prints
no table or mean reward as if they had succeeded; a sweep's metadata says what happened."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends import ChatRequest
from agentworld_envs.backends import faults as faults_module
from agentworld_envs.backends.faults import TooManyFaultsError
from agentworld_envs.backends.openai_compat import OpenAIBackend
from agentworld_envs.cli import main
from tests.helpers.examples import HANG_GUARD_S
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response

ROOT = Path(__file__).resolve().parents[2]
SEARCH = '{"name": "web_search", "arguments": {"queries": ["x"]}}'
REFUSAL = {"error": {"message": "the server is on fire"}}


def refusing(hit: int, body: dict[str, Any]) -> Reply:
    return Reply(500, REFUSAL)


def backend(server: FakeOpenAIServer, **extra: Any) -> dict[str, Any]:
    return {"name": "openai", "model": "m", "base_url": server.base_url, "max_retries": 0,
            "api_key_env": None, **extra}


def one_error_line(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """The one stderr line (asserted to be the only one), and stdout."""
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("agentworld: error: "), captured.err
    return captured.err, captured.out


def test_the_tally_stops_past_its_budget_and_reports_at_the_end() -> None:
    tally = faults_module.FaultTally(max_faults=-1, what="judge calls")
    tally.add(3, ["HTTP 500"] * 3)  # a negative budget never stops
    tally.add(2, ["timeout"])
    assert tally.summary() == "4 of 5 judge calls failed (3x HTTP 500; 1 other reason(s))"
    with pytest.raises(TooManyFaultsError, match=r"^4 of 5 judge calls failed .*; no table$"):
        tally.check("no table")
    faults_module.FaultTally().check()  # nothing failed: nothing raised


def test_gym_make_by_default_gives_a_flagged_fallback_and_a_warning() -> None:
    with FakeOpenAIServer(refusing) as server:
        env = gym.make("AgentWorld/Search-v0", backend=backend(server))
        env.reset(seed=0)
        with pytest.warns(RuntimeWarning, match="failed on 1 of 1 episode"):
            _, _, terminated, _, info = env.step(SEARCH)
        sim = env.unwrapped.sim
        assert info["observation_source"] == "fallback" and not terminated
        assert info["world_model"]["fault"] == "backend_error"
        assert "environment_unavailable" in env.unwrapped.episode.log.observations[-1]
        assert (sim.faults.calls, sim.faults.failed, sim.sources["fallback"]) == (1, 1, 1)
        env.close()

        strict = gym.make("AgentWorld/Search-v0", backend=backend(server), max_faults=0)
        strict.reset(seed=0)
        with warnings.catch_warnings(), pytest.raises(
                TooManyFaultsError, match=r"^1 of 1 model calls failed \(1x backend_error: .*"
                                          r"the server is on fire.*\(max_faults\)$"):
            warnings.simplefilter("ignore", RuntimeWarning)
            strict.step(SEARCH)
        strict.close()


def test_sim_fidelity_fails_with_one_line_and_no_table(
        capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer(refusing) as server:
        argv = ["sim", "fidelity", "--backend", json.dumps(backend(server)), "--tasks", "C3"]
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # the one line replaces them
            assert main(argv) == 1  # C3's 3 steps: within the default budget of 3
            err, out = one_error_line(capsys)
            assert err.startswith("agentworld: error: 3 of 3 model calls failed (3x "
                                  "backend_error: ")
            assert "the server is on fire" in err and err.endswith("; no table is printed\n")
            assert "exact" not in out
            assert main([*argv, "--max-faults", "0"]) == 1
        err, _ = one_error_line(capsys)
        assert "1 of 1 model calls failed" in err and "more than 0 (--max-faults)" in err
    assert server.hits == 4


def test_wm_fidelity_with_one_failed_call_in_budget_prints_no_table(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def once(hit: int, body: dict[str, Any]) -> Reply:
        return Reply(500, REFUSAL) if hit == 1 else Reply(200, chat_response("ok"))

    with FakeOpenAIServer(once) as server:
        assert main(["wm", "fidelity", "SAMPLE", "--backend", json.dumps(backend(server)),
                     "--batch-size", "1", "--out", str(tmp_path), "--no-progress"]) == 1
    err, out = one_error_line(capsys)
    assert err.startswith("agentworld: error: 1 of 42 world-model calls failed (1x ")
    assert err.endswith(f"; no table is printed (records in {tmp_path})\n")
    assert "|" not in out and len(read_jsonl(tmp_path / "records.jsonl")) == 42


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_simulated_rl_stops_with_one_line() -> None:
    with FakeOpenAIServer(lambda hit, body: Reply(400, REFUSAL)) as server:
        done = subprocess.run(
            [sys.executable, "examples/simulated_rl.py", "--base-url", server.base_url,
             "--model", "m", "--num-envs", "4", "--updates", "1", "--max-faults", "0"],
            capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=ROOT)
    assert done.returncode == 1 and "mean reward" not in done.stdout
    [last] = [line for line in done.stderr.splitlines() if "model calls" in line]
    assert "Warning" not in done.stderr, done.stderr
    assert re.fullmatch(r"error: (\d) of \1 model calls failed \(\1x backend_error: .*the "
                        r"server is on fire.*\); stopped after more than 0 \(max_faults\)",
                        last), last
    assert "Traceback" not in done.stderr


def test_a_timeout_says_what_to_set() -> None:
    with FakeOpenAIServer(lambda hit, body: Reply(200, chat_response("late"),
                                                  delay_s=2.0)) as server:
        slow = OpenAIBackend(model="m", base_url=server.base_url, api_key_env=None,
                             max_retries=0, timeout_s=0.2)
        [error] = slow.complete_each([ChatRequest([{"role": "user", "content": "hi"}])])
    assert 'timeout after 0.2 s' in str(error) and '"timeout_s": 900' in str(error)


def test_the_world_model_evidence_reports_no_fidelity_of_failed_calls() -> None:
    from agentworld_envs.bench.items import load_items
    from agentworld_envs.bench.sample import sample_path
    from trainers.experiments.world_model_evidence import _fidelity as fidelity
    failing = {"name": "scripted", "rules": [{"match": ".", "error": "GPU on fire"}]}
    with pytest.raises(TooManyFaultsError, match=r"^2 of 2 model calls failed \(2x .*GPU on "
                                                 r"fire.*; no base fidelity is reported$"):
        fidelity(failing, load_items(sample_path())[:2], "base", 16)


def test_the_agreement_check_names_no_setting_it_does_not_have() -> None:
    from agentworld_envs.backends.registry import make_backend
    from agentworld_envs.bench.items import load_items
    from agentworld_envs.bench.sample import sample_path
    from trainers.experiments.world_model_evidence import agreement
    failing = make_backend({"name": "scripted", "rules": [{"match": ".", "error": "GPU on fire"}]})
    with pytest.raises(TooManyFaultsError, match=r"^1 of 1 model calls failed \(1x .*GPU on "
                                                 r"fire.*; stopped after more than 0$"):
        agreement({"a": failing, "b": failing}, load_items(sample_path())[:1], 8)


def test_sim_fidelity_through_transformers_serve(tiny_server: tuple[str, str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The README's recipe on a real server: its refusal of top_k is no fault, the table counts
    the fallback observations; a timeout is a fault whose line says what to set."""
    base_url, model = tiny_server
    served = {"name": "openai", "model": model, "base_url": base_url, "api_key_env": None,
              "max_retries": 0}
    argv = ["sim", "fidelity", "--tasks", "C3", "--max-tokens", "8", "--backend"]
    with pytest.warns(RuntimeWarning, match="refused the request field"):
        assert main([*argv, json.dumps(served)]) == 0  # top_k refused and dropped, said once
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("C3/v0") and re.fullmatch(
        r"fallback observations: \d of 3 steps .*", out[-1])
    assert main([*argv, json.dumps({**served, "timeout_s": 0.001})]) == 1
    err, _ = one_error_line(capsys)
    assert "3 of 3 model calls failed (3x backend_error: " in err
    assert 'timeout after 0.001 s' in err and '"timeout_s": 900' in err


def test_reasons_that_differ_only_in_their_numbers_are_counted_as_one() -> None:
    tally = faults_module.FaultTally(max_faults=-1, what="world-model calls")
    tally.add(6, [f"the prompt has {n} tokens and the model's context is 64" for n in (70, 81)]
              + ["timeout"])
    assert tally.summary() == ("3 of 6 world-model calls failed (2x the prompt has 70 tokens and "
                               "the model's context is 64, its numbers varying; 1 other "
                               "reason(s))")
