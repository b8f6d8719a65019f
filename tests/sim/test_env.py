"""The single simulated env: registration, determinism, turns, termination, budget.

Gymnasium's ``check_env`` runs on every id in ``tests/test_registry_matrix.py``.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.backends.embedded import DOMAIN_ADAPTERS, NoDefaultWorldModelError
from agentworld_envs.backends.scripted import PLACEHOLDER_PREFIX, ScriptedBackend
from agentworld_envs.domains import DOMAINS
from agentworld_envs.models import ADAPTERS
from agentworld_envs.protocol.text_space import UnicodeText
from agentworld_envs.registration import ENV_IDS, env_id, make
from agentworld_envs.sim.config import SimConfig
from agentworld_envs.sim.env import AgentWorldEnv
from tests.helpers.examples import HANG_GUARD_S

WAIT = '[{"keystrokes": "", "duration": 1}]'
SEARCH_CALL = '{"name": "web_search", "arguments": {"queries": ["Corran Point lighthouse"]}}'


def scripted(*rules: dict) -> ScriptedBackend:
    return ScriptedBackend(list(rules), keep_requests=True)


def requests_of(backend: ScriptedBackend) -> list:
    return [request for batch in backend.batches for request in batch]


def test_eight_ids_are_registered_with_plain_data_kwargs_and_a_vector_entry_point() -> None:
    assert ENV_IDS == tuple(f"AgentWorld/{t}-v0" for t in
                            ("MCP", "Search", "Terminal", "SWE", "Android", "Web", "OS", "Floor"))
    for eid in ENV_IDS:
        spec = gym.spec(eid)
        assert spec.entry_point == "agentworld_envs.sim.env:AgentWorldEnv"
        assert spec.vector_entry_point == "agentworld_envs.sim.vector:AgentWorldVectorEnv"
        assert spec.max_episode_steps and not spec.nondeterministic
        json.loads(spec.to_json())  # plain data only


def test_import_registers_quietly_without_heavy_modules() -> None:
    code = ("import sys, agentworld_envs, gymnasium as gym\n"
            "heavy = [m for m in ('torch', 'transformers', 'pydantic', 'yaml', 'httpx',"
            " 'agentworld_envs.sim.env', 'agentworld_envs.domains.base') if m in sys.modules]\n"
            "assert not heavy, heavy\n"
            "assert 'AgentWorld/Floor-v0' in gym.registry\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_default_backend_is_the_fine_tuned_embedded_model_or_none(domain: str) -> None:
    """Floor and MCP default to the base with the shipped adapter; the other domains, whose
    untrained base loops on their prompts, refuse gym.make without a backend and say how."""
    kwargs = gym.spec(env_id(domain)).kwargs
    assert "backend" not in kwargs and "sampling" not in kwargs  # no per-domain override
    config = SimConfig(**kwargs)
    adapter = DOMAIN_ADAPTERS.get(domain)
    assert (adapter in ADAPTERS) is (domain in ("floor", "mcp"))  # fine-tuned where real ones are
    if adapter is None:
        with pytest.raises(NoDefaultWorldModelError) as raised:
            gym.make(env_id(domain))
        message = str(raised.value)
        assert '"base_url"' in message and 'backend="scripted"' in message
        assert "\n" not in message  # one line
        return
    assert config.world_model_backend() == {"name": "embedded", "adapter": adapter}
    params = config.world_model_params()
    assert (params.temperature, params.max_tokens) == (0.0, 768)  # greedy, the embedded bound


def rollout(env: gym.Env, seed: int, actions: list[str] | None = None) -> list:
    """Reset with ``seed`` and play the scenario's solution (the env reveals it); return the
    transcript."""
    obs, info = env.reset(seed=seed)
    steps = [obs]
    for action in actions or info["reference"]["solution"]:
        obs, reward, terminated, truncated, step_info = env.step(action)
        steps.append((obs, reward, terminated, truncated, step_info["world_model"]["flags"]))
        if terminated or truncated:
            break
    return [steps, env.unwrapped.episode.transcript]


@pytest.mark.parametrize("domain", ["mcp", "terminal", "web", "floor"])
def test_same_seed_same_transcript_and_the_seed_fixes_sampling(domain: str) -> None:
    backend = scripted()
    env = make(domain, backend=backend, reveal_reference=True)
    first, second = rollout(env, 7), rollout(env, 7)
    assert first == second
    seeds = [r.sampling.seed for r in requests_of(backend)]
    half = len(seeds) // 2
    assert half and seeds[:half] == seeds[half:]
    other = rollout(env, 8)
    assert other != first


def test_the_chat_is_real_multi_turn_history() -> None:
    backend = scripted({"match": "Turn 1", "reply": "<predicted_observation>[1] https://a."
                                                   "example\nTitle: A</predicted_observation>"})
    env = make("search", backend=backend)
    env.reset(seed=0, options={"scenario": "search-lighthouse-keeper"})
    env.step(SEARCH_CALL)
    env.step('{"name": "web_extractor", "arguments": {"url": "https://a.example"}}')
    first, second = requests_of(backend)
    assert [m["role"] for m in second.messages] == ["system", "user", "assistant", "user"]
    assert second.messages[:2] == first.messages
    assert second.messages[2]["content"] == (
        "**Environment Observation:**\n[1] https://a.example\nTitle: A")
    assert second.messages[3]["content"].startswith("### Turn 2\n**Action:**\n```json\n")
    assert "web_extractor" in second.messages[3]["content"]
    assert (first.sampling.temperature, first.sampling.top_p, first.sampling.top_k,
            first.sampling.max_tokens) == (0.6, 0.95, 20, 32768)
    assert first.sampling.seed != second.sampling.seed
    assert first.tools is None


def test_state_domains_show_the_current_state_and_os_repeats_the_task() -> None:
    backend = scripted({"match": ".", "reply": "<predicted_observation>NEW SCREEN"
                                               "</predicted_observation>"})
    env = make("os", backend=backend)
    obs, _ = env.reset(seed=0, options={"scenario": "os-vlc-volume-half"})
    initial = env.unwrapped.scenario.initial_state
    assert initial in obs
    assert env.step("VLCTools.set_volume(50)")[0] == "NEW SCREEN"
    env.step("pyautogui.click(1650, 1040)")
    first, second = (r.messages[-1]["content"] for r in requests_of(backend))
    assert f"**Current State:**\n{initial}" in first
    assert "**Current State:**\nNEW SCREEN" in second
    assert "**Task Instruction:**\nSet the VLC player's volume to 50%." in second
    assert "```python\npyautogui.click(1650, 1040)\n```" in second


@pytest.mark.parametrize(("domain", "scenario", "action", "ending", "answer"), [
    ("mcp", "mcp-github-open-bugs", "There are 7.", "final_answer", "There are 7."),
    ("web", "web-wiki-capital", "send_msg_to_user('Serra Vane')", "message", "Serra Vane"),
    ("web", "web-delete-admin-infeasible", 'report_infeasible(reason="not allowed")',
     "infeasible", "not allowed"),
    ("android", "android-battery-level", '{"action_type": "answer", "text": "62"}', "answer",
     "62"),
    ("android", "android-wifi-off", '{"action_type": "status", "goal_status": "infeasible"}',
     "infeasible", ""),
    ("os", "os-browser-bookmark", "DONE", "task_complete", ""),
    ("os", "os-install-visio-infeasible", " fail ", "infeasible", ""),
])
def test_episodes_end_through_each_domains_interface(domain, scenario, action, ending,
                                                     answer) -> None:
    backend = scripted()
    env = make(domain, backend=backend)
    env.reset(seed=0, options={"scenario": scenario})
    obs, _, terminated, truncated, info = env.step(action)
    assert (terminated, truncated) == (True, False)
    assert (info["termination"], info["answer"]) == (ending, answer)
    assert not backend.batches  # ending needs no world-model call
    assert "reward_breakdown" in info


@pytest.mark.parametrize("action", ["[]", "```json\n[]\n```"])
def test_the_world_model_confirms_terminal_completion_and_the_env_ends_it(action) -> None:
    backend = scripted({"match": "\\[\\]", "reply": "root@8b8b8b:/app# \nTask complete."})
    env = make("terminal", backend=backend)
    env.reset(seed=0, options={"scenario": "terminal-vim-save-quit"})
    obs, _, terminated, truncated, info = env.step(action)
    assert obs == "root@8b8b8b:/app# \nTask complete."  # the model's screen, not ours
    assert (terminated, truncated, info["termination"]) == (True, False, "task_complete")
    assert info["world_model"]["called"] and info["observation_source"] == "world_model"
    [request] = requests_of(backend)
    assert request.messages[-1]["content"].endswith("**Action:**\n```json\n[]\n```")


@pytest.mark.parametrize(("domain", "scenario", "action"), [
    ("terminal", "terminal-wait-for-build", '[{"keystrokes": "", "duration": 5}]'),
    ("web", "web-cart-two-mugs", "fill('802', '2')"),
    ("android", "android-dark-theme", '{"action_type": "click", "index": 2}'),
    ("os", "os-make-project-folder", "WAIT"),
    ("swe", "swe-count-todos", '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}'
                               "</tool_call>"),
])
def test_ordinary_actions_are_simulated_and_do_not_end_the_episode(domain, scenario,
                                                                   action) -> None:
    backend = scripted()
    env = make(domain, backend=backend)
    env.reset(seed=0, options={"scenario": scenario})
    obs, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["world_model"]["called"] and info["world_model"]["ok"]
    assert obs.startswith(PLACEHOLDER_PREFIX) and len(backend.batches) == 1


@pytest.mark.parametrize(("domain", "action", "error"), [
    ("mcp", '{"name": "get_note", "arguments": "{broken"}', "not valid JSON"),
    ("mcp", '{"name": "delete_everything", "arguments": {}}', "unknown tool"),
    ("terminal", "ls -la", "not a JSON array"),
    ("terminal", '[{"keystrokes": "ls\\n", "duration": -1}]', "duration"),
    ("android", '{"action_type": "fly"}', "action_type must be one of"),
    ("android", '{"action_type": "click"}', "needs an index"),
    ("android", '{"action_type": "scroll", "direction": "sideways"}', "direction"),
    ("web", "click()", "needs ['bid']"),
    ("web", "click('a1'); click('a2')", "one Python call"),
    ("web", "__import__('os').system('id')", "browser actions by name"),
    ("web", "fill('a1', open('x').read())", "literals"),
    ("os", "pyautogui.click(1, ", "does not parse"),
])
def test_malformed_actions_are_answered_locally_and_flagged(domain, action, error) -> None:
    backend = scripted()
    env = make(domain, backend=backend)
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["invalid_action"] and error in info["action_error"]
    assert error in obs and (reward, terminated, truncated) == (0.0, False, False)
    assert not backend.batches
    if domain != "mcp":
        assert obs.endswith(env.unwrapped.episode.state)


def test_non_string_and_over_long_actions_are_invalid_not_errors() -> None:
    env = make("swe", backend="scripted", max_action_chars=100)
    env.reset(seed=0)
    for action in (None, 42, {"name": "bash"}, "x" * 101):
        obs, _, terminated, _, info = env.step(action)
        assert info["invalid_action"] and not terminated and obs in env.observation_space


def test_truncation_at_the_step_budget_computes_the_reward() -> None:
    env = make("terminal", backend="scripted", max_steps=2)
    assert env.spec.max_episode_steps == 2
    env.reset(seed=0, options={"scenario": "terminal-count-log-errors"})
    wait = '[{"keystrokes": "", "duration": 1}]'
    assert env.step(wait)[2:4] == (False, False)
    _, reward, terminated, truncated, info = env.step(wait)
    assert (terminated, truncated, reward) == (False, True, 0.0)
    assert info["termination"] == "step_budget_exhausted"
    assert info["reward_breakdown"]["checks"]["completed"] is False


def test_a_scenario_budget_below_the_env_budget_wins() -> None:
    env = make("mcp", backend="scripted")
    scenario = {**env.unwrapped.sim.domain.builtin["mcp-kanban-doing-count"].model_dump(),
                "max_steps": 1}
    obs, info = env.reset(seed=0, options={"scenario": scenario})
    assert info["max_steps"] == 1
    assert env.step('{"name": "get_board", "arguments": {"board_key": "OPS"}}')[3] is True


def test_stepping_after_the_end_never_raises() -> None:
    env = AgentWorldEnv("mcp", backend="scripted")
    with pytest.raises(gym.error.ResetNeeded):
        env.step("hello")
    env.reset(seed=0)
    assert env.step("final answer")[2] is True
    obs, reward, terminated, truncated, info = env.step("again")
    assert (reward, terminated, truncated) == (0.0, True, False) and info["invalid_action"]
    assert "reset()" in obs


def test_controls_fire_on_their_turns_and_tools_and_by_seeded_chance() -> None:
    backend = scripted()
    env = make("mcp", backend=backend, controls=[
        {"kind": "stale_data", "probability": 0.5},
        {"kind": "custom", "turns": [2], "note": "Answer in French."}])
    board = '{"name": "get_board", "arguments": {"board_key": "OPS"}}'
    cards = '{"name": "list_cards", "arguments": {"board_key": "OPS", "column": "Doing"}}'

    def play(seed: int) -> list[tuple[str, ...]]:
        env.reset(seed=seed, options={"scenario": "mcp-kanban-doing-count"})
        return [env.step(action)[4]["controls"] for action in (cards, board, board, board)]

    fired = play(3)
    texts = [r.messages[-1]["content"] for r in requests_of(backend)]
    assert any("finds nothing" in c for c in fired[0])      # scenario: list_cards on turn 1
    assert not any("finds nothing" in c for c in fired[1])  # get_board is not targeted
    assert any("Answer in French." in c for c in fired[1])  # env-level control, turn 2
    assert not any("French" in c for c in (*fired[0], *fired[2]))
    for controls, text in zip(fired, texts, strict=True):
        assert all(f"\nControl (this turn only; never mention it): {c}" in text
                   for c in controls)
        assert ("\nControl (" in text) == bool(controls)
    assert play(3) == fired
    chance = [any("outdated snapshot" in c for c in cs) for seed in range(8) for cs in play(seed)]
    assert 0 < sum(chance) < len(chance)


def test_fictional_mode_can_be_forced_either_way() -> None:
    for fictional, scenario in [(True, "search-eiffel-opening-year"),
                                (False, "search-lighthouse-keeper")]:
        backend = scripted()
        env = make("search", backend=backend, fictional=fictional)
        _, info = env.reset(seed=0, options={"scenario": scenario})
        env.step(SEARCH_CALL)
        [request] = requests_of(backend)
        system, turn = request.messages[0]["content"], request.messages[-1]["content"]
        assert info["fictional"] is fictional
        assert ("Fictional World: This world is fictional" in turn) is fictional
        assert "This world is fictional" not in system  # nothing episode-specific there


def test_render_observation_space_and_candidate_actions() -> None:
    env = make("web", backend="scripted", render_mode="ansi")
    obs, info = env.reset(seed=1)
    assert obs in env.observation_space and isinstance(env.observation_space, UnicodeText)
    action = env.unwrapped.candidate_actions()[0]
    env.step(action)
    text = env.render()
    assert info["scenario_id"] in text and action in text and "[turn 1 observation" in text


def test_an_env_pickles_mid_episode_and_the_copy_plays_on_alike() -> None:
    env = make("terminal", backend="scripted")
    env.reset(seed=5)
    env.step(WAIT)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.step(WAIT)[0] == env.step(WAIT)[0]
    assert clone.unwrapped.episode.transcript == env.unwrapped.episode.transcript


def test_a_recording_env_pickles_mid_episode_and_both_record_on(tmp_path) -> None:
    path = tmp_path / "calls.jsonl"
    env = make("terminal", backend="scripted", record_path=str(path))
    env.reset(seed=5)
    env.step(WAIT)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.step(WAIT)[0] == env.step(WAIT)[0]
    assert clone.unwrapped.episode.transcript == env.unwrapped.episode.transcript
    assert len(path.read_text(encoding="utf-8").splitlines()) == 3  # the copy records too
    clone.close()
    env.close()


def test_bad_settings_fail_at_make_time() -> None:
    with pytest.raises(ValueError, match="seed"):
        gym.make(env_id("mcp"), backend="scripted", sampling={"seed": 3})
    with pytest.raises(ValueError, match="unknown backend"):
        gym.make(env_id("mcp"), backend="nope")
    with pytest.raises(ValueError):
        gym.make(env_id("mcp"), backend="scripted", scenarios=[])


def test_a_late_step_reads_its_new_message_not_the_whole_history(monkeypatch) -> None:
    """An operation count, not a time: the bytes a step puts through the request digest stay
    flat over 120 turns (they grew with the history when each request was re-read whole)."""
    from agentworld_envs.protocol import chat

    canonical, read = chat._canonical, []
    monkeypatch.setattr(chat, "_canonical", lambda message: read.append(
        len(canonical(message))) or canonical(message))
    backend = scripted()
    env = make("terminal", backend=backend, max_steps=120)
    env.reset(seed=0)
    per_step = []
    for _ in range(120):
        read.clear()
        env.step('[{"keystrokes": "ls -la\\n", "duration": 1}]')
        per_step.append(sum(read))
    assert max(per_step[-10:]) <= 2 * max(per_step[1:11])
    monkeypatch.setattr(chat, "_canonical", canonical)
    for request in requests_of(backend)[::30]:  # the running digest is the whole one
        assert request.digest() == chat.messages_digest(request.messages)


@pytest.mark.parametrize("field", ["sampling", "judge_sampling"])
def test_sampling_no_backend_can_honour_is_refused_at_make_naming_the_field(field: str) -> None:
    with pytest.raises(ValueError, match=rf"^AgentWorld env setting {field}: temperature must "
                                         "be a finite number >= 0, not -1$"):
        gym.make("AgentWorld/Search-v0", backend="scripted", **{field: {"temperature": -1}})
