"""The ``agentworld`` console script's errors: one line on stderr, the right exit status, the
nearest valid names for a typo, a traceback only with ``--debug``; quiet broken pipes; Ctrl-C
that says how to resume; a missing optional library named with its extra."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentworld_envs.cli import main
from agentworld_envs.cli_errors import UsageError
from floor_tasks.harness.corpus_io import read_records
from tests.helpers.examples import HANG_GUARD_S
from tests.helpers.server import FakeOpenAIServer, Reply, chat_response, free_port

CLI = [sys.executable, "-m", "agentworld_envs.cli"]
CALL = '{"name": "x", "arguments": {}}'
NOWHERE = "/no/such/place"
REPLAY_NOWHERE = json.dumps({"name": "replay", "path": f"{NOWHERE}.jsonl"})
SIM_FIDELITY = ["sim", "fidelity", "--backend", "scripted", "--tasks", "C3"]


def dead_backend(**extra: object) -> str:
    """An ``openai`` backend (JSON) whose server refuses connections."""
    return json.dumps({"name": "openai", "model": "m", "max_retries": 0,
                       "base_url": f"http://127.0.0.1:{free_port()}/v1", **extra})


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("agentworld: error: "), err
    return err


USAGE_ERRORS = {
    "task id": (["floor", "run", "--tasks", "A1,C33"], ["unknown task id 'C33'", "'C3'",
                                                        "agentworld floor list"]),
    "backend": (["floor", "run", "--backend", "opnai"], ["unknown backend 'opnai'", "'openai'"]),
    "sim domain": (["sim", "scenarios", "wbe"], ["unknown domain 'wbe'", "'web'"]),
    "request domain": (["sim", "request", "termnal", "[]"], ["'terminal'"]),
    "team env": (["team", "play", "team_envs/rely-v0"], ["'team_envs/relay-v0'",
                                                         "agentworld team envs"]),
    "command": (["floor", "rnu"], ["invalid choice: 'rnu'", "agentworld floor --help"]),
    "wm without a backend": (["wm", "fidelity", "SAMPLE"], ["--backend", "--predictions"]),
    "sim without a backend": (["sim", "fidelity", "--tasks", "C3"], ["--backend scripted"]),
    "sim task": (["sim", "fidelity", "--backend", "scripted", "--tasks", "E44"], ["'E4'"]),
    "sim backend": (["sim", "fidelity", "--backend", "scriptd"], ["'scripted'"]),
    "backend JSON": (["sim", "fidelity", "--backend", "{bad", "--tasks", "C3"],
                     ["backend is not valid JSON"]),
    "wm sampling": (["wm", "fidelity", "SAMPLE", "--backend", "scripted", "--temperature", "-1"],
                    ["--temperature/--max-tokens: temperature must be a finite number >= 0"]),
    "judge sampling": (["wm", "bench", "SAMPLE", "--backend", "scripted", "--judge", "scripted",
                        "--judge-max-tokens", "0"],
                       ["--judge-temperature/--judge-max-tokens: max_tokens must be"]),
    "backend arguments": (["wm", "fidelity", "SAMPLE", "--backend", '{"name": "openai"}'],
                          ["backend 'openai': missing a required argument: 'model'"]),
    "unknown tier": (["floor", "run", "--tasks", "tier:Z"], ["unknown tier(s) ['Z']",
                                                             "tiers are A0, A, B, C, D, E"]),
    "no tier": (["floor", "run", "--tasks", "tier:"], ["no tier after 'tier:'"]),
    "tier among ids": (["floor", "run", "--tasks", "A1,tier:B"], ["unknown task id 'tier:B'"]),
    "no task": (["floor", "run", "--tasks", ","], ["one or more task ids"]),
    "task twice": (["floor", "run", "--tasks", "A1,C3,A1"], ["duplicate task ids: A1"]),
    "sim tier": (["sim", "fidelity", "--backend", "scripted", "--tasks", "tier:Z"],
                 ["unknown tier(s) ['Z']"]),
    "sim task twice": (["sim", "fidelity", "--backend", "scripted", "--tasks", "C3,C3"],
                       ["duplicate task ids: C3"]),
    "repeats": (["floor", "run", "--tasks", "A1", "--repeats", "0"],
                ["--repeats: must be at least 1, got 0"]),
    "backend key": (["floor", "run", "--backend", '{"name": "openai", "model": "m", '
                                                  '"baseurl": "http://127.0.0.1:9/v1"}'],
                    ["backend 'openai': unknown key 'baseurl'; did you mean 'base_url'?"]),
    "no model call": (["sim", "request", "mcp", "{not json"], ["needs no world-model call"]),
    "scenario": (["sim", "request", "mcp", CALL, "--scenario", "nosuch"],
                 ["unknown mcp scenario 'nosuch'", "agentworld sim scenarios mcp"]),
    "variant": ([*SIM_FIDELITY, "--variants", "zz"],
                ["--variants: no selected task has variant(s) 'zz'"]),
    "request prompts": (["sim", "request", "mcp", CALL, "--prompts", NOWHERE],
                        [f"prompt directory '{NOWHERE}' does not exist"]),
    "fidelity prompts": ([*SIM_FIDELITY, "--prompts", NOWHERE],
                         [f"prompt directory '{NOWHERE}' does not exist"]),
    "max tokens": ([*SIM_FIDELITY, "--max-tokens", "-1"], ["--max-tokens: must be at least 1"]),
    "max faults": ([*SIM_FIDELITY, "--max-faults", "-5"], ["--max-faults: must be at least -1"]),
    "fidelity seed": ([*SIM_FIDELITY, "--seed", "-1"], ["--seed: must be at least 0, not -1"]),
    "request seed": (["sim", "request", "mcp", CALL, "--seed", "-1"], ["--seed: must be at least"]),
    "generate seed": (["sim", "generate", "search", "--seed", "-3"], ["--seed: must be at least"]),
    "count": (["sim", "generate", "search", "--count", "-5"], ["--count: must be at least 1"]),
    "play seed": (["team", "play", "team_envs/relay-v0", "--seed", "-1"], ["must be at least 0"]),
    "team size": (["team", "play", "team_envs/relay-v0", "--env-kwargs", '{"n_agents": -2}'],
                  ["n_agents must be an integer from 2 to 8, got -2"]),
    "trainer flag": (["team", "train", "happo", "--total-episodes", "abc"],
                     ["invalid int value: 'abc'", "agentworld team train happo --help"]),
    "replay file": (["sim", "fidelity", "--backend", REPLAY_NOWHERE, "--tasks", "C3"],
                    [f"no such file or directory: {NOWHERE}.jsonl"]),
    "trainer team env": (["team", "train", "teamtr", "--env-id", "team_envs/relya-v0"],
                         ["unknown team env 'team_envs/relya-v0'; did you mean "
                          "'team_envs/relay-v0' or ", "team_envs/countdown-v0"]),
}


@pytest.mark.parametrize("case", USAGE_ERRORS)
def test_a_usage_error_is_one_line_with_the_nearest_names(
        case: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv, expected = USAGE_ERRORS[case]
    assert main(argv) == 2
    err = one_error_line(capsys)
    assert all(text in err for text in expected), err
    assert "atari" not in err.lower() and "Traceback" not in err


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_a_backend_key_typo_is_refused_before_any_folder_is_made(
        command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs"
    backend = {"name": "hf", "modle": "smollm2"}
    config = tmp_path / "sweep.yaml"
    config.write_text(json.dumps({"sweep_name": "s", "results_dir": str(out), "tasks": ["A1"],
                                  "models": [{"name": "m", "backend": backend}]}))
    argv = (["floor", "run", "--backend", json.dumps(backend), "--out", str(out)]
            if command == "run" else ["floor", "sweep", str(config)])
    assert main(argv) == 2
    err = one_error_line(capsys)
    assert "backend 'hf': unknown key 'modle'; did you mean 'model'?" in err
    assert command == "run" or f"{config}:1: models.0.backend: " in err  # JSON: one line
    assert not out.exists()


def test_a_missing_corpus_is_a_usage_error_naming_the_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nowhere")
    for argv in (["floor", "report", missing],
                 ["wm", "export", "--corpus", missing, "--out", str(tmp_path / "out")]):
        assert main(argv) == 2
        assert missing in one_error_line(capsys)


def test_a_dead_world_model_server_is_a_failure_naming_url_and_cause(
        capsys: pytest.CaptureFixture[str]) -> None:
    backend = dead_backend()
    assert main(["wm", "fidelity", "SAMPLE", "--backend", backend, "--no-progress"]) == 1
    err = one_error_line(capsys)
    assert json.loads(backend)["base_url"] in err and "connection error" in err


def test_a_sweep_against_a_dead_server_names_url_and_cause(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    backend = json.loads(dead_backend())
    config = tmp_path / "dead.yaml"
    config.write_text(json.dumps({  # YAML reads JSON
        "sweep_name": "dead", "results_dir": str(tmp_path / "runs"), "tasks": ["A1", "A2"],
        "probe_before_run": True, "models": [{"name": "m", "backend": backend}]}))
    assert main(["floor", "sweep", str(config), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "probe said" not in err
    assert backend["base_url"] in err and "connection error" in err
    assert "2 runs left for resume" in err


def test_debug_shows_the_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageError, match="unknown task id 'C33'"):
        main(["--debug", "floor", "run", "--tasks", "C33"])
    result = subprocess.run(CLI + ["--debug", "sim", "scenarios", "wbe"], capture_output=True,
                            text=True, timeout=HANG_GUARD_S)
    assert result.returncode != 0 and "Traceback" in result.stderr
    assert "did you mean 'web'" in result.stderr


def test_the_oracle_run_says_what_it_ran_and_where_it_went(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["floor", "run", "--tasks", "tier:A0", "--out", str(tmp_path / "c"),
                 "--report", str(tmp_path / "r"), "--no-progress"]) == 0
    ran, where = capsys.readouterr().out.splitlines()[-2:]
    assert ran.startswith("ran: the reference solutions (oracle), not a model. tiers: A0 ")
    assert "E long-horizon planning" in ran
    assert where.startswith(f"corpus: {tmp_path / 'c'} (5 new runs, 0 already done); ")
    assert where.endswith(f"report: {tmp_path / 'r' / 'report.md'}")


@pytest.mark.parametrize("command", ["sim list", "sim generate mcp --count 500"])
def test_a_broken_pipe_is_quiet(command: str, tmp_path: Path) -> None:
    err = tmp_path / "stderr"
    python = " ".join(CLI)
    result = subprocess.run(f"{python} {command} 2>{err} | head -1", shell=True,
                            capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert result.stdout.count("\n") == 1
    assert err.read_text() == ""


def test_ctrl_c_says_what_was_saved_and_the_sweep_resumes(tmp_path: Path) -> None:
    slow = {"on": False}

    def reply(hit: int, body: dict) -> Reply:
        return Reply(body=chat_response("done"), delay_s=30.0 if slow["on"] and hit > 2 else 0)

    out = tmp_path / "corpus"
    with FakeOpenAIServer(reply) as server:
        backend = json.dumps({"name": "openai", "model": "m", "base_url": server.base_url,
                              "max_retries": 0})
        argv = ["floor", "run", "--backend", backend, "--tasks", "A01", "--repeats", "5",
                "--batch-size", "1", "--out", str(out), "--no-progress"]
        slow["on"] = True
        proc = subprocess.Popen(CLI + argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        while server.hits < 3 and proc.poll() is None:  # however long the start takes
            time.sleep(0.05)
        assert server.hits >= 3, "the sweep should be waiting on the slow reply"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=HANG_GUARD_S)
        assert proc.returncode == 130
        assert err.count("\n") == 1, err
        assert err.startswith(f"agentworld: interrupted: finished runs are saved in {out}; "
                              "resume with: agentworld floor run")
        assert "--repeats 5" in err
        assert len(read_records(out)) == 2

        slow["on"] = False
        resumed = subprocess.run(CLI + argv, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert resumed.returncode == 0, resumed.stderr
    assert "(3 new runs, 2 already done)" in resumed.stdout
    ids = [r.run_id for r in read_records(out)]
    assert len(ids) == len(set(ids)) == 5


def test_a_dead_judge_is_a_failure_naming_url(capsys: pytest.CaptureFixture[str]) -> None:
    judge = dead_backend()
    assert main(["wm", "bench", "SAMPLE", "--backend", "scripted", "--judge", judge,
                 "--max-retries", "1", "--no-progress"]) == 1
    assert json.loads(judge)["base_url"] in one_error_line(capsys)


def test_bench_on_placeholders_says_so_and_why_items_failed(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["wm", "bench", "SAMPLE", "--backend", "scripted", "--judge", "scripted",
                 "--max-retries", "1", "--max-faults", "-1"]) == 1  # no verdict was read
    out = capsys.readouterr().out.splitlines()
    assert out[-3] == "Failed samples (excluded from every mean): judge output: no JSON object: 42"
    assert out[-2].startswith("note: the world model is the scripted placeholder, not a model")
    assert out[-1].startswith("note: the judge is the scripted placeholder, not a model")


def test_a_trainer_setting_error_is_one_line_and_no_tensorboard_is_not_none(
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["team", "train", "teamtr", "--n-agents", "2", "--prompts-per-rollout", "32",
            "--eval-episodes", "16", "--log-dir", "", "--env-kwargs", '{"vocab_size": 3}']
    assert main([*argv, "--total-episodes", "64"]) == 2
    assert "total_episodes: 64 is less than one rollout batch" in one_error_line(capsys)
    assert main([*argv, "--total-episodes", "128"]) == 2  # one rollout, but a stage is two
    assert "total_episodes: 128 is below one stage (256" in one_error_line(capsys)
    assert main([*argv, "--total-episodes", "256"]) == 0
    out = capsys.readouterr().out
    assert "(TensorBoard off (--log-dir))" in out and "None" not in out


def test_the_llm_agent_example_reports_a_dead_server_in_one_line() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    done = subprocess.run(
        [sys.executable, "examples/llm_agent_floor.py", "--base-url", url, "--model", "m",
         "--tasks", "A1"], capture_output=True, text=True, timeout=HANG_GUARD_S,
        cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and url in lines[0] and "connection error" in lines[0], done.stderr


def test_a_missing_extra_is_one_line_with_its_install_hint_and_other_import_errors_are_bugs(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import trainers.world_model.cli as wm_cli

    monkeypatch.setitem(sys.modules, "trl", None)  # `import trl` raises ImportError
    assert main(["wm", "sft", "--train", "items.jsonl"]) == 1
    err = one_error_line(capsys)
    assert 'pip install "agentworld[train]"' in err and "Traceback" not in err

    def broken(args: object) -> int:
        raise ImportError("cannot import name 'x' from 'y'")

    monkeypatch.setattr(wm_cli, "_cmd_sft", broken)
    with pytest.raises(ImportError, match="cannot import name"):
        main(["wm", "sft", "--train", "items.jsonl"])


def test_a_served_replay_of_a_missing_file_is_refused_before_it_serves() -> None:
    pytest.importorskip("uvicorn")
    pytest.importorskip("openenv")
    with subprocess.Popen(CLI + ["serve", "AgentWorld/MCP-v0", "--backend", REPLAY_NOWHERE,
                                 "--port", "0"], stderr=subprocess.PIPE, text=True) as server:
        first = server.stderr.readline()
        if not first.startswith("agentworld: error: "):
            server.terminate()  # it serves
        assert server.wait(timeout=HANG_GUARD_S) == 2
    assert first == (f"agentworld: error: no such file or directory: {NOWHERE}.jsonl "
                     "(check the path)\n")


HIDE = """\
import sys
class Hidden:
    def __init__(self, finder):
        self.finder = finder
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {hidden!r}:
            return None
        return self.finder.find_spec(name, path, target)
    def __getattr__(self, name):
        return getattr(self.finder, name)
sys.meta_path[:] = [Hidden(finder) for finder in sys.meta_path]
"""
"""A fresh interpreter's prelude that hides the modules ``hidden`` (top-level names), as if they
were not installed."""


def without(hidden: set[str], code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where ``hidden`` are not installed."""
    return subprocess.run([sys.executable, "-c", HIDE.format(hidden=hidden) + code], cwd=cwd,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)


def cli_code(*argv: str) -> str:
    """Code that runs ``agentworld ARGV`` and exits with its status."""
    return f"from agentworld_envs.cli import main\nsys.exit(main({list(argv)!r}))\n"


@pytest.mark.parametrize("command", ["report", "run"])
def test_a_report_without_matplotlib_is_written_without_its_plot(
        command: str, tmp_path: Path) -> None:
    corpus, out = tmp_path / "corpus", tmp_path / "report"
    run = ["floor", "run", "--tasks", "A1", "--out", str(corpus), "--no-progress"]
    if command == "report":
        assert main(run) == 0
    argv = {"report": ["floor", "report", str(corpus), "--out", str(out)],
            "run": [*run, "--report", str(out)]}[command]
    done = without({"matplotlib"}, cli_code(*argv), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1 and 'pip install "agentworld[plot]"' in done.stderr
    assert (out / "report.md").read_text().startswith("# AgentFloor report")
    assert "ladder.png" not in (out / "report.md").read_text()
    assert not (out / "ladder.png").exists()


def test_team_train_without_torch_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    done = without({"torch"}, cli_code("team", "train", "teamtr"), tmp_path)
    assert done.returncode == 1
    assert done.stderr == ('agentworld: error: agentworld team train needs torch: '
                           'pip install "agentworld[train]"\n')


LIBRARY_HINTS = {
    "remote env": (
        {"openenv"},
        "from agentworld_envs.serve.client import RemoteEnv\nRemoteEnv('http://127.0.0.1:9')",
        'RemoteEnv needs openenv: pip install "agentworld[serve]"'),
    "tiny model": (
        {"torch"},
        "from agentworld_envs.trl import build_tiny_chat_model\nbuild_tiny_chat_model('tiny')",
        'the tiny chat model needs torch: pip install "agentworld[train]"'),
    "candidate policy": (
        {"stable_baselines3"}, "from agentworld_envs.wrappers import CandidateScoringPolicy",
        'CandidateScoringPolicy needs stable-baselines3 and torch: pip install "agentworld[rl]"'),
}
"""Case -> the modules hidden, the code run, the hint in the last line of its error."""


@pytest.mark.parametrize("case", LIBRARY_HINTS)
def test_a_library_feature_without_its_extra_names_it(case: str, tmp_path: Path) -> None:
    hidden, code, hint = LIBRARY_HINTS[case]
    done = without(hidden, code, tmp_path)
    assert done.returncode == 1
    assert hint in done.stderr.splitlines()[-1], done.stderr
