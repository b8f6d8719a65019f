"""Symbolic team tasks: verifiers, message parsing, and the batched fast path matching the env."""

from __future__ import annotations

import numpy as np
import pettingzoo
import pytest

import team_envs  # noqa: F401
from team_envs.symbolic import CompositionalTask, ReferentialTask, RelayTask, SymbolicTask


def play_env(env_id: str, seed: int, policy, **kwargs) -> tuple[float, list[dict]]:
    """Play one AEC episode with ``policy(agent_index, observation) -> action``."""
    env = pettingzoo.make("aec", env_id, **kwargs)
    env.reset(seed=seed)
    observations = []
    for name in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        if terminated or truncated:
            env.step(None)
            continue
        observations.append(observation)
        env.step(policy(int(name.split("_")[1]), observation))
    return reward, observations


def test_relay_copying_team_scores_one_and_a_wrong_receiver_scores_zero() -> None:
    def copy(agent: int, obs: dict) -> np.ndarray:
        return obs["private"] if agent == 0 else obs["context"][(agent - 1) * 2:agent * 2]

    reward, _ = play_env("team_envs/relay-v0", 3, copy, n_agents=4, message_length=2)
    assert reward == 1.0

    def half_wrong(agent: int, obs: dict) -> np.ndarray:
        message = copy(agent, obs).copy()
        if agent == 3:
            message[1] = (message[1] + 1) % 4
        return message

    reward, _ = play_env("team_envs/relay-v0", 3, half_wrong, n_agents=4, message_length=2)
    assert reward == 0.5


def test_relay_step_credit_counts_every_correct_message() -> None:
    task = RelayTask(n_agents=4, credit="steps")
    private = [np.array([[2]])] + [np.zeros((1, 0), dtype=np.int64)] * 3
    messages = np.array([[[2], [2], [1], [2]]])
    assert task.score(private, messages).tolist() == [0.75]
    assert RelayTask(n_agents=4).score(private, messages).tolist() == [1.0]


def test_compositional_targets_fold_the_roles() -> None:
    task = CompositionalTask(roles=["add", "sub", "relay", "add"], vocab_size=5)
    private = [np.array([[3]]), np.array([[4]]), np.zeros((1, 0), dtype=np.int64),
               np.array([[2]])]
    assert task.targets(private)[0, :, 0].tolist() == [3, 4, 4, 1]
    assert task.private_nvec(2) == ()

    def running_total(agent: int, obs: dict) -> list[int]:
        heard = 0 if agent == 0 else int(obs["context"][agent - 1])
        role = ["add", "sub", "relay", "add"][agent]
        x = int(obs["private"][0]) if "private" in obs else 0
        return [{"add": heard + x, "sub": heard - x, "relay": heard}[role] % 5]

    for seed in range(5):
        reward, _ = play_env("team_envs/compositional-v0", seed, running_total,
                             roles=["add", "sub", "relay", "add"], vocab_size=5)
        assert reward == 1.0


def test_referential_listener_names_the_target_position() -> None:
    task = ReferentialTask(n_agents=3, attributes=2, values=3, candidates=3, vocab_size=4)
    rng = np.random.default_rng(0)
    private = task.sample_private(rng, 200)
    position = task.target_position(private)
    candidates = private[2].reshape(200, 3, 2)
    assert (candidates[np.arange(200), position] == private[0]).all()
    assert all(len({tuple(o) for o in c}) == 3 for c in candidates)  # distinct candidates
    messages = np.full((200, 3, 2), task.pad)
    messages[:, 2, 0] = position
    assert task.score(private, messages).tolist() == [1.0] * 200
    messages[:, 2, 0] = (position + 1) % 3
    assert task.score(private, messages).tolist() == [0.0] * 200


@pytest.mark.parametrize(("action", "expected"), [
    (2, [2]), (np.int8(1), [1]), ([3], [3]), (np.array([0]), [0]), ("c", [2]), (" d ", [3]),
    (True, None), (4, None), (-1, None), ("e", None), ("", None), ([1, 2], None),
    ({"a": 1}, None), (None, None), (1.5, None), ([[1]], None), ("ab", None),
])
def test_parse_message(action: object, expected: list[int] | None) -> None:
    parsed = RelayTask(vocab_size=4).parse_message(action)
    assert (parsed is None and expected is None) or parsed.tolist() == expected


class _FailingArray:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array")


@pytest.mark.parametrize("action", [_FailingArray(), range(10**13)])
def test_a_foreign_or_huge_action_is_an_invalid_message(action: object) -> None:
    """Read without numpy copying it: a sized action of the wrong length is refused first."""
    env = pettingzoo.make("aec", "team_envs/relay-v0", n_agents=2)
    env.reset(seed=0)
    env.step(action)
    assert env.unwrapped.infos["agent_0"]["invalid_action"] is True


def test_mutating_an_observation_leaves_the_episode_alone() -> None:
    env = pettingzoo.make("aec", "team_envs/relay-v0", n_agents=2, vocab_size=4)
    env.reset(seed=1)
    secret = int(env.observe("agent_0")["private"][0])
    state = env.unwrapped.state().copy()
    env.observe("agent_0")["private"][:] = (secret + 1) % 4
    assert env.unwrapped.state().tolist() == state.tolist()
    assert env.observe("agent_0")["private"].tolist() == [secret]
    env.step([secret])
    env.step([secret])
    assert env.unwrapped.rewards["agent_0"] == 1.0


def test_parse_message_reads_letters_for_long_messages() -> None:
    task = RelayTask(vocab_size=5, message_length=3)
    assert task.parse_message("c a e").tolist() == [2, 0, 4]
    assert task.parse_message("cae").tolist() == [2, 0, 4]
    assert task.symbols(np.array([2, 5, 0])) == "c _ a"


@pytest.mark.parametrize("task", [
    RelayTask(n_agents=5, vocab_size=3, message_length=2, window=2),
    ReferentialTask(n_agents=4),
    CompositionalTask(roles=["add", "relay", "sub"], credit="steps"),
], ids=["relay", "referential", "compositional"])
def test_batched_fast_path_matches_the_env(task: SymbolicTask) -> None:
    """Env episodes replayed through one SymbolicBatch give the same views and rewards."""
    env = pettingzoo.make("aec", f"team_envs/{task.family}-v0", **_kwargs(task))
    rng = np.random.default_rng(0)
    views, rewards, privates, messages = [], [], [], []
    for seed in range(6):
        env.reset(seed=seed)
        episode = env.unwrapped.episode
        privates.append([p.copy() for p in episode.batch.private])
        said = rng.integers(task.vocab_size, size=(task.n_agents, task.message_length))
        for agent in range(task.n_agents):
            obs = env.observe(f"agent_{agent}")
            views.append((agent, seed, obs["context"].copy(), obs.get("private")))
            env.step(said[agent])
        messages.append(said)
        rewards.append(env.rewards["agent_0"])
    batch = task.batch([np.concatenate([p[a] for p in privates]) for a in range(task.n_agents)])
    for agent in range(task.n_agents):
        context, private = batch.observe(agent)
        for _, seed, env_context, env_private in (v for v in views if v[0] == agent):
            assert context[seed].tolist() == env_context.tolist()
            if env_private is not None:
                assert private[seed].tolist() == env_private.tolist()
        batch.act(np.stack([m[agent] for m in messages]))
    assert batch.score().tolist() == rewards


def _kwargs(task: SymbolicTask) -> dict:
    common = {"vocab_size": task.vocab_size, "message_length": task.message_length,
              "window": task.window}
    if isinstance(task, CompositionalTask):
        return {**common, "roles": list(task.roles), "credit": task.credit}
    if isinstance(task, ReferentialTask):
        return {**common, "n_agents": task.n_agents}
    return {**common, "n_agents": task.n_agents, "credit": task.credit}


def test_window_limits_what_an_agent_hears() -> None:
    task = RelayTask(n_agents=4, window=2)
    messages = np.array([[[0], [1], [2], [3]]])
    assert task.context(messages, 3).tolist() == [[4, 1, 2, 4]]
    assert RelayTask(n_agents=4, window=None).context(messages, 3).tolist() == [[0, 1, 2, 4]]


def test_observation_text_shows_inputs_and_heard_messages() -> None:
    env = pettingzoo.make("aec", "team_envs/relay-v0", n_agents=3)
    env.reset(seed=0)
    secret = env.observe("agent_0")["private"]
    env.step(secret)
    text = env.observe("agent_1")["text"]
    assert "agent_1 (relay)" in text and f"agent_0: {'abcd'[secret[0]]}" in text


def test_observation_text_and_render_spell_out_the_whole_episode_so_far() -> None:
    env = pettingzoo.make("aec", "team_envs/compositional-v0", roles=["add", "relay", "sub"],
                          window=None, render_mode="ansi")
    env.reset(seed=4)
    env.step(np.array([2]))
    env.step("zz")  # invalid: an empty message
    observation = env.observe("agent_2")
    assert observation["text"] == (
        "compositional team; you are agent_2 (sub); turn 2 of 3\nyour input: sub d\n"
        "heard: agent_0: c; agent_1: _\nreply with 1 symbol(s) from: a b c d")
    assert observation["context"].tolist() == [2, 4, 4]
    assert env.render() == ("agent_0 (add) [add c]: c\nagent_1 (relay) [relay]: _\n"
                            "agent_2 (sub) [sub d]: ...")


def _transcript(env: pettingzoo.AECEnv, seed: int) -> list:
    """Every ``last()`` and render of one episode played with a fixed invalid/valid mix."""
    env.reset(seed=seed)
    steps = []
    for turn, name in enumerate(env.agent_iter()):
        observation, reward, terminated, truncated, info = env.last()
        steps.append(({k: np.asarray(v).tolist() for k, v in observation.items()}, reward,
                      terminated, truncated, info, env.render()))
        action = env.action_space(name).nvec - 1 - turn % 2 if turn % 3 else "not a message"
        env.step(None if terminated or truncated else action)
    return steps


@pytest.mark.parametrize(("env_id", "kwargs"), [
    ("team_envs/relay-v0", {"n_agents": 4, "window": 2, "message_length": 2}),
    ("team_envs/referential-v0", {"n_agents": 3, "window": None}),
    ("team_envs/compositional-v0", {"roles": ["sub", "relay", "add"], "credit": "steps"}),
])
def test_a_reused_env_observes_what_a_fresh_one_does(env_id: str, kwargs: dict) -> None:
    """Nothing the env caches (texts, hearing masks) carries over from one episode to the next."""
    reused = pettingzoo.make("aec", env_id, render_mode="ansi", **kwargs)
    for seed in (3, 8, 3):
        fresh = pettingzoo.make("aec", env_id, render_mode="ansi", **kwargs)
        assert _transcript(reused, seed) == _transcript(fresh, seed)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"vocab_size": 1}, "vocab_size"), ({"message_length": 0}, "message_length"),
    ({"window": 0}, "window"), ({"credit": "all"}, "credit"),
])
def test_invalid_symbolic_settings_are_rejected(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        RelayTask(**kwargs)


def test_invalid_compositional_and_referential_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown compositional roles"):
        CompositionalTask(roles=["add", "mul"])
    with pytest.raises(ValueError, match="n_agents=3 but 2 roles"):
        CompositionalTask(n_agents=3, roles=["add", "add"])
    with pytest.raises(ValueError, match="candidates"):
        ReferentialTask(candidates=5, vocab_size=4)
