"""The sim-to-real experiment can fail: simulated episodes touch nothing real, the held-out split
tests reading, and a simulator that is readable but wrong does not pass it."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from agentworld_envs.cli_errors import UsageError
from agentworld_envs.domains import get_domain
from agentworld_envs.domains.mcp.twin import McpTwin
from floor_tasks.database import load_fixture
from floor_tasks.env import FloorEnv
from floor_tasks.task import load_task
from floor_tasks.tools import FloorToolkit
from trainers.experiments import sim_to_real

LOOKUP_35 = '{"name": "lookup_record", "arguments": {"record_id": "CMP-35"}}'


@pytest.fixture(scope="module")
def s2r():
    return sim_to_real


@pytest.fixture
def real_touches(monkeypatch) -> Counter:
    """Counts every construction of the real envs and every call to their tools."""
    touched: Counter = Counter()
    for owner, name in ((FloorEnv, "__init__"), (FloorToolkit, "dispatch"),
                        (McpTwin, "__init__"), (McpTwin, "step")):
        original = getattr(owner, name)

        def spy(*args, _original=original, _name=f"{owner.__name__}.{name}", **kwargs):
            touched[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(owner, name, spy)
    return touched


@pytest.mark.parametrize(("task", "arm"), [("C1", "sim"), ("C1", "sim-inverted"),
                                           ("mcp:inventory", "sim")])
def test_a_simulated_update_touches_no_real_env(s2r, tmp_path: Path, real_touches: Counter,
                                                task: str, arm: str) -> None:
    args = s2r.Args(task=task, out=tmp_path, world_model="scripted", batch=4, mcp_train=2,
                    mcp_eval=2)
    agent = s2r.LinearAgent(args, s2r.make_task(args), arm, seed=0, world_model="scripted")
    real_touches.clear()
    agent.update(real=False)
    assert not real_touches  # no real env built, no real tool called, submissions included
    agent.update(real=True)  # the spies do see the real env where it is played
    assert real_touches["FloorEnv.__init__" if task == "C1" else "McpTwin.step"] > 0
    agent.close()


def test_the_spies_reach_a_simulated_env_that_has_a_real_counterpart(s2r, tmp_path: Path,
                                                                     real_touches: Counter):
    """The same vector env with its real counterpart on builds and plays the real env, so the
    test above would see it."""
    envs = gym.make_vec("AgentWorld/Floor-v0", num_envs=2, backend="scripted",
                        scenarios=["C1/i0v0"])
    _, info = envs.reset(seed=0)
    envs.step([c[0] for c in info["candidate_actions"]])
    envs.close()
    assert real_touches["FloorEnv.__init__"] > 0 and real_touches["FloorToolkit.dispatch"] > 0


def test_the_held_out_split_shares_no_record_or_name_with_training(s2r, tmp_path: Path) -> None:
    """The default C1 split is on generated records: 40 held-out records, one item each, whose
    ids and names no training episode shows, not even among its candidate actions."""
    task = s2r.make_task(s2r.Args(out=tmp_path))

    def shown(variants: list[str]) -> tuple[set[str], set[str]]:
        ids, names = set(), set()
        for variant in variants:
            name = load_task(variant.split("/")[0]).variant(variant.split("/")[1])
            record = load_fixture(name.task.fixture).records[name.params["record_id"]]
            ids.add(name.params["record_id"])
            names.update(record["name"].split())
        return ids, names

    (train_ids, train_words), (eval_ids, eval_words) = shown(task.train), shown(task.eval)
    assert len(task.eval) == len(eval_ids) == 40 and len(train_ids) == 20
    assert not train_ids & eval_ids and not train_words & eval_words
    floor = get_domain("floor")
    training_text = " ".join(  # prompts, candidate actions and the world model's notes
        " ".join([s.instruction, s.world or "", *s.candidate_actions])
        for s in map(floor.resolve, task.train))
    assert all(record in training_text for record in train_ids)
    assert not any(record in training_text for record in eval_ids)
    for variants in (task.train, task.eval):
        assert Counter(task.decisions[v] for v in variants) == {
            "assign_primary": len(variants) // 2, "assign_fallback": len(variants) // 2}


def test_the_fixture_split_is_still_there(s2r, tmp_path: Path) -> None:
    task = s2r.make_task(s2r.Args(out=tmp_path, floor_records=[]))

    def records(variants: list[str]) -> set[str]:
        return {FloorEnv("C1", variant=v.split("/")[1]).reset(seed=0)[0].split("CMP-")[1][:2]
                for v in variants}

    assert records(task.train) == {"31", "33"} and records(task.eval) == {"35", "36"}
    assert len(task.eval) == 10  # two records, five wordings each
    with pytest.raises(UsageError, match="C1 only"):
        s2r.make_task(s2r.Args(out=tmp_path, task="C3"))
    with pytest.raises(UsageError, match="two counts"):
        s2r.make_task(s2r.Args(out=tmp_path, floor_records=[20]))
    with pytest.raises(UsageError, match="--floor-records: each split needs"):
        s2r.make_task(s2r.Args(out=tmp_path, floor_records=[20, 30]))


def test_the_record_controls_show_every_field_true_but_the_status(s2r) -> None:
    shown = {}
    for control in s2r.CONTROLS:
        rule = next(r for r in s2r.record_simulator(["C1"], control)["rules"]
                    if re.search(r["match"], LOOKUP_35))
        envelope = json.loads(rule["reply"].split("\n")[1])
        shown[control] = envelope["result"]["fields"]
    assert shown["sim-fixture"]["status"] == "active"  # CMP-35 as the fixture has it
    assert shown["sim-inverted"]["status"] == "inactive"
    assert {c: f.pop("status") for c, f in shown.items()}["sim-constant"] == "active"
    assert shown["sim-fixture"] == shown["sim-inverted"] == shown["sim-constant"]


def _sim_reward(s2r, control: str, variant: str, decision: str,
                decided_by: str = "shown") -> float:
    env = gym.make("AgentWorld/Floor-v0", backend=s2r.record_simulator(["C1"], control),
                   real_counterpart=False, scenarios=[f"C1/{variant}"], max_steps=2,
                   decided_by=decided_by)
    env.reset(seed=0)
    record_id = load_task("C1").variant(variant).params["record_id"]
    env.step(LOOKUP_35.replace("CMP-35", record_id))
    reward = env.step(json.dumps({"name": "submit_decision", "arguments": {
        "record_id": record_id, "action": decision}}))[1]
    env.close()
    return reward


@pytest.mark.parametrize(("control", "rewarded"), [
    ("sim-fixture", "assign_primary"), ("sim-inverted", "assign_fallback"),
    ("sim-constant", "assign_primary")])
def test_the_simulated_submission_follows_what_the_simulator_showed(s2r, control: str,
                                                                    rewarded: str) -> None:
    """CMP-31 is active: shown inactive, the fallback branch is what the simulation accepts."""
    other = {"assign_primary": "assign_fallback", "assign_fallback": "assign_primary"}[rewarded]
    assert _sim_reward(s2r, control, "i0v0", rewarded) == 1.0
    assert _sim_reward(s2r, control, "i0v0", other) == 0.0


@pytest.mark.parametrize("control", ["sim-fixture", "sim-inverted", "sim-constant"])
def test_a_scenario_decided_submission_follows_the_record_whatever_was_shown(
        s2r, control: str) -> None:
    """With ``decided_by="scenario"`` CMP-31 (active) pays the primary branch under every
    simulator, so one that showed it inactive pays the branch its shown status does not call
    for."""
    assert _sim_reward(s2r, control, "i0v0", "assign_primary", "scenario") == 1.0
    assert _sim_reward(s2r, control, "i0v0", "assign_fallback", "scenario") == 0.0


@pytest.mark.parametrize("decided_by", ["shown", "scenario"])
def test_a_readable_but_wrong_simulator_does_not_pass_the_held_out_split(s2r, tmp_path: Path,
                                                                         decided_by: str) -> None:
    """One status for every record teaches no reading: decided by the shown status it rewards
    one branch only, and the trained policy takes that branch on every held-out record (the
    blind bound); decided by the scenario it rewards both branches behind the same status, so
    what the policy learns follows words that carry no decision, and it scores near chance on
    the held-out records. Neither is a pass. The true records, with the same short training,
    do pass: the split can be passed by reading."""
    args = s2r.Args(out=tmp_path, batch=64, decided_by=decided_by)
    task = s2r.make_task(args)

    def trained(arm: str, seed: int) -> dict[str, float]:
        agent = s2r.LinearAgent(args, task, arm, seed=seed, world_model="scripted")
        for _ in range(args.updates):
            agent.update(real=False)
        outcomes = s2r.evaluate(task, agent)
        agent.close()
        return outcomes

    for seed in range(2):
        outcomes = trained("sim-constant", seed)
        assert s2r.balanced(task, outcomes) <= (0.5 if decided_by == "shown" else 0.65)
        assert decided_by == "scenario" or not any(
            outcomes[v] for v in task.eval if task.decisions[v] == "assign_fallback")
    assert s2r.balanced(task, trained("sim-fixture", 0)) > 0.75


def test_an_inverted_simulator_fails_where_the_scenario_decides(s2r, tmp_path: Path) -> None:
    """The control that can fail for a readable simulator: with submissions decided by the
    scenario's records (the experiment's default), the inverted simulator pays the branch its
    shown status does not call for, so its policy learns the inverted rule and scores below
    the blind bound on the held-out real records, where the true records' simulator passes.
    Decided by the shown status instead, the same simulator passes: there it cannot fail."""
    def trained(arm: str, decided_by: str) -> float:
        args = s2r.Args(out=tmp_path, batch=64, decided_by=decided_by)
        task = s2r.make_task(args)
        agent = s2r.LinearAgent(args, task, arm, seed=0, world_model="scripted")
        for _ in range(args.updates):
            agent.update(real=False)
        score = s2r.balanced(task, s2r.evaluate(task, agent))
        agent.close()
        return score

    assert s2r.Args().decided_by == "scenario"
    assert trained("sim-inverted", "scenario") < 0.25
    assert trained("sim-fixture", "scenario") > 0.75
    assert trained("sim-inverted", "shown") > 0.75


def test_world_model_takes_a_registered_name_or_a_json_spec(s2r, tmp_path: Path,
                                                            monkeypatch) -> None:
    from agentworld_envs.backends import registry
    from agentworld_envs.backends.scripted import ScriptedBackend

    built = []
    monkeypatch.setitem(registry._REGISTRY, "s2r-test",  # as register_backend puts it
                        lambda: built.append(1) or ScriptedBackend())
    assert s2r.world_model_spec('{"name": "scripted", "rules": []}') == {
        "name": "scripted", "rules": []}
    args = s2r.Args(out=tmp_path, batch=2)
    agent = s2r.LinearAgent(args, s2r.make_task(args), "sim", seed=0,
                            world_model=s2r.world_model_spec("s2r-test"))
    agent.update(real=False)
    agent.close()
    assert built


def test_nothing_real_needs_a_simulated_mode_and_reward() -> None:
    with pytest.raises(ValueError, match="real_counterpart=False"):
        gym.make("AgentWorld/Floor-v0", backend="scripted", real_counterpart=False,
                 reward="real")


def test_crossed_variants_pair_an_instance_with_a_wording() -> None:
    task = load_task("C1")
    assert task.variant("i3v2").params["record_id"] == "CMP-35"
    assert task.variant("i3v2").prompt == task.prompts[2].replace("$record_id", "CMP-35")
    assert task.variant("i0v1").prompt == task.variant("v1").prompt
    with pytest.raises(ValueError, match="has instances"):
        task.variant("i9v0")


BROKEN = {"name": "scripted", "rules": [{"match": ".", "error": "GPU on fire"}]}
"""A world model whose every call fails."""


@pytest.mark.parametrize("agent", ["linear", "ppo"])
def test_failed_world_model_calls_stop_the_run_unless_asked_to_go_on(s2r, tmp_path: Path,
                                                                    agent: str) -> None:
    from agentworld_envs.backends.faults import TooManyFaultsError

    small = {"out": tmp_path, "batch": 16, "updates": 1, "eval_every": 1, "agent": agent,
             "ppo_envs": 2, "ppo_steps": 8, "ppo_minibatch": 4, "ppo_epochs": 1}
    args = s2r.Args(**small)
    task = s2r.make_task(args)
    with pytest.raises(TooManyFaultsError, match="GPU on fire"):
        s2r.run_arm(args, task, "sim", 0, BROKEN)  # the default budget
    with pytest.raises(TooManyFaultsError, match="GPU on fire.*stopped after more than 0"):
        s2r.run_arm(s2r.Args(**small, max_faults=0), task, "sim", 0, BROKEN)
    with pytest.raises(TooManyFaultsError, match="GPU on fire.*trained on fallbacks"):
        s2r.run_arm(s2r.Args(**small, max_faults=10_000), task, "sim", 0, BROKEN)
    went_on = s2r.run_arm(s2r.Args(**small, max_faults=-1), task, "sim", 0, BROKEN)
    assert went_on["failed_world_model_calls"] > 0
    healthy = s2r.run_arm(args, task, "sim", 0, "scripted")
    assert healthy["failed_world_model_calls"] == 0


def test_the_blind_arm_never_reads_a_tool_result_and_stays_at_the_blind_bound(
        s2r, tmp_path: Path) -> None:
    """``real-blind`` trains on the real env with its policy shown the prompt in place of every
    observation: on calendar servers it cannot read an event's start, so it stays near the
    blind 1/3, while the same training that reads its observations passes it."""
    from trainers.experiments.sim_to_real.linear import BlindPolicy, LinearPolicy

    blind = BlindPolicy(np.random.default_rng(0), 0.1, 0.0)
    blind.weights[:] = np.random.default_rng(1).normal(size=blind.size)
    candidates = ["assign_primary CMP-35", "assign_fallback CMP-35"]
    result = '{"tool_name": "lookup_record", "result": {"status": "%s"}}'
    shown = [blind.act("task", obs, 1, candidates, greedy=True)[1][0]
             for obs in ("", result % "active", result % "inactive")]
    assert all(np.array_equal(shown[0], probs) for probs in shown)
    reader = LinearPolicy(np.random.default_rng(0), 0.1, 0.0)
    reader.weights[:] = blind.weights
    assert not np.array_equal(reader.act("task", result % "inactive", 1, candidates)[1][0],
                              shown[0])

    args = s2r.Args(out=tmp_path, task="mcp:calendar", batch=32)
    task = s2r.make_task(args)
    scores = {}
    for arm in ("real-blind", "real"):
        agent = s2r.LinearAgent(args, task, arm, seed=0, world_model="scripted")
        assert isinstance(agent.policy, BlindPolicy) == (arm == "real-blind")
        for _ in range(10):
            agent.update(real=True)
        scores[arm] = s2r.balanced(task, s2r.evaluate(task, agent))
    assert scores["real-blind"] <= 0.5 < scores["real"]


class _FirstListedAnswer:
    """Calls every tool the env offers, then gives the first answer the env lists: a policy
    that cannot tell the answers apart and takes the first, as a greedy policy breaks ties."""

    def __init__(self, task, seed: int | None = None) -> None:
        self.task, self.seed = task, seed

    def play(self, variant: str, seed: int) -> float:
        env, _ = self.task.play(variant, None, seed if self.seed is None else self.seed)
        candidates = env.candidate_actions()
        answers = [c for c in candidates if c.startswith("The answer is")]
        for call in (c for c in candidates if c not in answers):
            env.step(call)
        return float(env.step(answers[0])[1])


def test_scoring_lists_each_held_out_items_candidates_in_an_order_of_its_own(
        s2r, tmp_path: Path) -> None:
    """Scored with one reset seed for every held-out crm server, the first-listed answer is
    right on 12 of 24 (14 of 24 on the split before it filtered answer values, exactly what the
    real-blind arm scored then); each item's own seed takes the tie-break back to chance."""
    task = s2r.make_task(s2r.Args(task="mcp:crm", out=tmp_path))
    one_order = s2r.balanced(task, s2r.evaluate(task, _FirstListedAnswer(task, seed=0)))
    assert one_order == pytest.approx(12 / 24)
    assert s2r.balanced(task, s2r.evaluate(task, _FirstListedAnswer(task))) <= 1 / 3


def test_what_each_floor_simulator_shows_of_the_asked_record(s2r, tmp_path: Path) -> None:
    """``shown_statuses``: the true records show every field as the fixture has it, the
    inverted control the other status on every record, the constant one the wrong status on
    the inactive half, and the placeholder no record."""
    task = s2r.make_task(s2r.Args(out=tmp_path))
    shown = {arm: s2r.shown_statuses(task, task.train, s2r.sim_backend(arm, "scripted", task))
             for arm in ("sim-fixture", "sim-inverted", "sim-constant", "sim-garbage")}
    assert shown["sim-fixture"]["every field true"] == 1.0
    assert shown["sim-inverted"]["status wrong"] == 1.0
    assert shown["sim-constant"]["status wrong"] == shown["sim-constant"]["every field true"] \
        == 0.5
    assert shown["sim-garbage"]["none"] == 1.0
    assert all(sum(row.values()) == pytest.approx(1.0) for row in shown.values())


def test_a_perfect_score_still_gets_an_interval_from_its_items(s2r) -> None:
    """The bootstrap of 40/40 on every seed has no width; Wilson over the 40 items does."""
    from trainers.experiments.sim_to_real.scoring import item_intervals

    perfect = {"items": {f"v{i}": 1.0 for i in range(40)}}
    half = {"items": {f"v{i}": float(i % 2) for i in range(40)}}
    (low, high), (low_half, high_half) = item_intervals([perfect, half])
    assert 0.90 < low < 0.92 and high == 1.0
    assert low_half < 0.5 < high_half


def test_the_table_the_docs_copy_holds_every_arm_and_its_figures() -> None:
    from trainers.experiments.sim_to_real.run import table

    row = {"balanced_success": 0.905, "ci95": [0.725, 1.0], "per_seed": [1.0, 0.55],
           "wilson95_items_per_seed": [[0.912, 1.0], [0.394, 0.696]],
           "real_training_episodes": 640, "real_scoring_episodes": 1200,
           "simulated_episodes": 5760, "seconds": 174.5}
    lines = table({"real-capped+sim": row, "sim": {**row, "per_seed": [0.0, 0.0]}}).splitlines()
    assert len(lines) == 4
    assert lines[2] == ("| real-capped+sim | 640 / 1,200 | 5,760 | 0.91 (0.72–1.00) | "
                        "0.39–1.00 | 1.00, .55 | 174 |")
    assert lines[3].startswith("| sim |") and "| .00, .00 |" in lines[3]
    ppo = {key.replace("episodes", "timesteps") if key.endswith("training_episodes")
           or key.startswith("simulated") else key: value for key, value in row.items()}
    assert table({"real": ppo}).startswith("| arm | real-env timesteps (training) / episodes "
                                           "(scoring) | simulated timesteps |")


def test_paired_real_updates_give_the_capped_arms_the_same_real_episodes(s2r,
                                                                         tmp_path: Path) -> None:
    """By default an arm's real draws are seeded by the seed and the
    arm, so ``real-capped`` and ``real-capped+sim`` play different real episodes (unpaired);
    ``--paired-real-updates`` seeds them by the seed alone, so both arms' first real updates
    are the same."""
    def weights(paired: bool) -> list[np.ndarray]:
        args = s2r.Args(out=tmp_path, batch=8, world_model="scripted",
                        paired_real_updates=paired)
        task = s2r.make_task(args)
        found = []
        for arm in ("real-capped", "real-capped+sim"):
            agent = s2r.LinearAgent(args, task, arm, seed=0, world_model="scripted")
            for _ in range(args.real_updates):
                agent.update(real=True)
            found.append(agent.policy.weights.copy())
            agent.close()
        return found

    capped, with_sim = weights(paired=False)
    assert not np.array_equal(capped, with_sim)
    capped, with_sim = weights(paired=True)
    assert np.abs(capped).sum() > 0 and np.array_equal(capped, with_sim)


def test_the_inverted_control_pays_the_true_rule_on_every_training_record(s2r) -> None:
    """Why ``sim-inverted`` cannot fail on C1: its simulated reward applies the task's rule to
    the status it shows, so on every training record of the generated split it pays the
    decision of the shown (inverted) status, never the record's true one. Taught that on
    relabelled records, a policy learns the true rule, which is what scores on held-out
    records."""
    import floor_tasks

    task = s2r.make_task(s2r.Args())
    env = gym.make("AgentWorld/Floor-v0", max_steps=2, real_counterpart=False,
                   backend=s2r.record_simulator(task.train_tasks, "sim-inverted"),
                   scenarios=task.train, decided_by="shown")
    swap = {"assign_primary": "assign_fallback", "assign_fallback": "assign_primary"}
    paid = Counter()
    for variant in task.train:
        lookup, submit = floor_tasks.solution(*variant.split("/"))
        true = json.loads(submit)["arguments"]["action"]
        shown = json.dumps({**json.loads(submit), "arguments": {
            **json.loads(submit)["arguments"], "action": swap[true]}})
        for name, action in (("true", submit), ("shown", shown)):
            env.reset(seed=0, options={"scenario": variant})
            env.step(lookup)
            paid[name] += env.step(action)[1]
    env.close()
    assert paid == {"true": 0, "shown": len(task.train)} and len(task.train) == 20


def test_a_run_says_once_that_it_reuses_recorded_answers_and_its_own_replays_are_quiet(
        s2r, tmp_path: Path, monkeypatch, capsys) -> None:
    """Every arm and seed after the first reads the answers the first recorded: that is the
    design, so no ``ReplayedWarning`` is shown for them; a file from an earlier run is said
    once, at the start."""
    import warnings

    from agentworld_envs.backends.replay import ReplayedWarning
    from trainers.experiments.sim_to_real import run as run_module

    calls = tmp_path / "world_model_calls.jsonl"
    monkeypatch.setattr(run_module, "record_path", lambda args, backend: str(calls))
    argv = ["--out", str(tmp_path), "--arms", "sim", "--seeds", "2", "--updates", "1",
            "--batch", "8", "--eval-every", "1", "--world-model", "scripted"]
    for run in range(2):
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            s2r.main(argv)
        assert not [w for w in shown if issubclass(w.category, ReplayedWarning)]
        assert calls.stat().st_size > 0
        assert ("reusing the world-model answers" in capsys.readouterr().out) == (run == 1)


@pytest.mark.parametrize("flags", [["--seeds", "0"], ["--updates", "0", "--batch", "0"],
                                   ["--agent", "x"], ["--task", "mcp:nope"]])
def test_the_examples_bad_settings_are_one_line_status_2(flags: list[str], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    """``--seeds 0`` raised IndexError after the run; the others exited 1."""
    from agentworld_envs.cli import run_command

    argv = ["--out", str(tmp_path / "out"), "--world-model", "scripted", *flags]
    assert run_command(lambda: sim_to_real.main(argv)) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "out").exists()
