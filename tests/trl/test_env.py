"""Our envs in TRL's GRPOTrainer: tool schemas, both adapters end to end with a tiny model."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("trl", reason="the TRL adapters need trl: pip install 'agentworld[train]'")

import floor_tasks  # noqa: E402
from agentworld_envs.domains import DOMAINS, get_domain  # noqa: E402
from agentworld_envs.registration import ENV_IDS  # noqa: E402
from agentworld_envs.trl import (  # noqa: E402
    TurnRollout,
    build_tiny_chat_model,
    environment_class,
    environment_reward,
    floor_rows,
    imprint,
    solution_examples,
    turn_environment_class,
)
from agentworld_envs.trl.environment import ENDED  # noqa: E402
from agentworld_envs.trl.tool_methods import tool_method  # noqa: E402
from tests.helpers.scripted_envs import scripted_kwargs  # noqa: E402

SYSTEM = "Use the tools, then answer."


def _tool_schemas() -> list[tuple[str, dict[str, Any]]]:
    """Every tool of every floor task and of every domain's built-in and generated scenarios."""
    from floor_tasks.tools import FloorToolkit

    found = [(t.id, s) for t in floor_tasks.load_tasks() for s in FloorToolkit.schemas(t.tools)]
    for key in DOMAINS:
        domain = get_domain(key)
        scenarios = list(domain.builtin.values())
        if key in ("search", "mcp"):
            scenarios += [domain.generate(seed) for seed in range(5)]
        found += [(f"{key}/{s.id}", tool) for s in scenarios for tool in domain.tools(s)]
    return found


def test_every_tool_schema_passes_get_json_schema() -> None:
    from transformers.utils import get_json_schema

    schemas = _tool_schemas()
    assert len({s["function"]["name"] for _, s in schemas}) > 20
    for where, schema in schemas:
        rendered = get_json_schema(tool_method(schema, lambda *a: ""))["function"]
        declared = schema["function"]["parameters"]
        assert rendered["name"] == schema["function"]["name"], where
        assert set(rendered["parameters"]["properties"]) == set(declared.get("properties", {}))
        assert set(rendered["parameters"].get("required", [])) == set(declared.get("required", []))


def test_submit_decision_itself_passes_get_json_schema() -> None:
    from transformers.utils import get_json_schema

    from floor_tasks.tools import FloorToolkit

    assert get_json_schema(FloorToolkit.submit_decision)["function"]["name"] == "submit_decision"


@pytest.mark.parametrize("env_id", [floor_tasks.env_id(t) for t in floor_tasks.TASK_IDS]
                         + [e for e in ENV_IDS if e != "AgentWorld/Floor-v0"])
def test_environment_class_exposes_each_tool(env_id: str) -> None:
    from transformers.utils import get_json_schema

    cls = environment_class(env_id, **scripted_kwargs(env_id))
    session = cls()
    session.reset(seed=0)
    methods = {n for n, _ in inspect.getmembers(cls, inspect.isfunction)
               if not n.startswith("_") and n != "reset"}
    assert methods == ({t["function"]["name"] for t in session.tools} or {"act"})
    for name in methods:
        get_json_schema(getattr(session, name))
    session.env.close()


def test_tool_methods_pass_calls_to_the_env_unchecked() -> None:
    session = environment_class("AgentFloor/C3-v0")()
    session.reset(variant="v0")
    observation = session.lookup_record(record_id=12)  # wrong type: the env says so
    assert json.loads(observation)["error"]["type"] == "schema_validation_error"
    assert session.env.unwrapped.trace.calls[-1]["malformed"] is True
    session.env.close()


def test_a_tool_argument_named_self_reaches_the_env() -> None:
    """Before, Python refused it (``got multiple values for argument 'self'``), with no step:
    TRL showed the model an error the harness never gives instead of the env's label."""
    session = environment_class("AgentFloor/C3-v0")()
    session.reset(variant="v0")
    envelope = json.loads(session.lookup_record(self="P104"))
    assert envelope["error"]["type"] == "schema_validation_error"
    assert "self: Extra inputs are not permitted" in envelope["error"]["message"]
    assert session.actions == ['{"name": "lookup_record", "arguments": {"self": "P104"}}']
    session.env.close()


DOWN = {"name": "scripted", "rules": [{"match": ".", "error": "GPU down"}]}


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_backend_fault_in_a_tool_call_ends_the_episode_and_is_raised_by_the_reward() -> None:
    """TRL's tool loop turns every exception of a tool into ``{"error": ...}`` for the model.
    Before, a world-model fault (``on_fault="raise"``) was swallowed that way and the episode
    scored 0.0 as if the agent had failed; the env could also be stepped again."""
    from agentworld_envs.sim.model_client import WorldModelFault

    session = environment_class("AgentWorld/Search-v0", backend=DOWN, on_fault="raise")()
    session.reset(seed=0)
    with pytest.raises(WorldModelFault, match="GPU down"):  # what TRL catches
        session.web_search(queries=["x"])
    assert session.done and isinstance(session.fault, WorldModelFault)
    turns = session.env.unwrapped.episode.turn
    assert session.web_search(queries=["y"]).endswith(ENDED)  # no second step on a fault
    assert session.env.unwrapped.episode.turn == turns == 1
    with pytest.raises(WorldModelFault, match="GPU down"):
        environment_reward([[{"role": "assistant", "content": "An answer."}]], [session])
    session.reset(seed=0)  # a new episode forgets the fault
    assert session.fault is None and not session.done
    session.env.close()


def _cycle() -> dict[str, Any]:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    return looped


@pytest.mark.parametrize(("value", "error", "said"), [
    (b"P104", TypeError, "type bytes is not JSON serializable"),
    ({"P104"}, TypeError, "type set is not JSON serializable"),
    (object(), TypeError, "type object is not JSON serializable"),
    (_cycle(), ValueError, "Circular reference"),
    (10 ** 5000, ValueError, "integer string conversion"),
], ids=["bytes", "set", "object", "cycle", "5001-digit int"])
def test_a_tool_method_refuses_a_python_value_json_cannot_carry(value: Any, error: type,
                                                                 said: str) -> None:
    """Before, bytes, sets and objects went to the env as their str(); a cycle and a huge int
    raised json's own error, naming neither the tool nor the argument."""
    session = environment_class("AgentFloor/C3-v0")()
    session.reset(variant="v0")
    with pytest.raises(error, match=f"lookup_record\\(\\): argument 'record_id' cannot be sent as"
                                    f" JSON \\(.*{said}"):
        session.lookup_record(record_id=value)
    assert session.actions == [] and session.env.unwrapped.trace.calls == []  # no step spent
    session.env.close()


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_number_reaches_the_env_as_the_model_wrote_it(value: float) -> None:
    session = environment_class("AgentFloor/C3-v0")()
    session.reset(variant="v0")
    envelope = json.loads(session.lookup_record(record_id=value))
    assert envelope["error"]["type"] == "parse_error" and "not finite" in envelope["error"][
        "message"]
    assert session.actions == [json.dumps({"name": "lookup_record",
                                           "arguments": {"record_id": value}})]
    session.env.close()


def test_oversized_text_is_refused_by_the_env_within_its_limits() -> None:
    floor = environment_class("AgentFloor/C3-v0")()
    floor.reset(variant="v0")
    envelope = json.loads(floor.lookup_record(record_id="P" * 2_000_000))
    assert envelope["error"]["type"] == "arguments_too_large" and not floor.done
    floor.env.close()
    terminal = environment_class("AgentWorld/Terminal-v0", backend="scripted")()
    terminal.reset(seed=0)
    assert "2000000 characters long; the limit is" in terminal.act(action="y" * 2_000_000)
    assert "an action must be a string, got int" in terminal.act(action=5)
    terminal.env.close()


@pytest.mark.parametrize(("completion", "got"), [
    (5, "a completion must be .* got int"), ([5], "a completion must be .* got int"),
    ({"role": "assistant"}, "a completion must be .* got dict"),
    (("answer",), "a completion must be .* got tuple"),
    ([{"role": "assistant", "content": 5}], "content must be a string or a list of content "
                                            "parts \\(dicts\\); got int"),
])
def test_environment_reward_answers_a_bad_completion_with_a_clear_error(completion: Any,
                                                                         got: str) -> None:
    session = environment_class("AgentFloor/A1-v0")()
    session.reset(variant="v0")
    with pytest.raises(TypeError, match=got):
        environment_reward([completion], [session])
    assert session.actions == []
    assert environment_reward([[]], [session]) == [0.0]  # nothing said: an open episode
    session.env.close()


def test_environment_reward_reads_content_parts_as_their_text() -> None:
    """Before, a list of content parts was played as the action itself (not a string)."""
    session = environment_class("AgentFloor/A1-v0")()
    session.reset(variant="v0")
    environment_reward([[{"role": "assistant", "content": [
        {"type": "text", "text": "The status "}, {"type": "text", "text": "is active."}]}]],
        [session])
    assert session.actions == ["The status is active."] and session.done
    session.env.close()


@pytest.mark.parametrize(("environments", "error", "said"), [
    (None, ValueError, "the trainer passed none"),
    ([], ValueError, "one env per completion; got 1 completions and 0 envs"),
    ([object()], TypeError, "scores EnvSession instances .* got object"),
])
def test_environment_reward_answers_missing_or_foreign_envs(environments: Any, error: type,
                                                            said: str) -> None:
    with pytest.raises(error, match=said):
        environment_reward(["an answer"], environments)


def test_max_episode_steps_of_the_class_ends_the_episode_with_a_verdict() -> None:
    """Before, TRL's session was cut at 2 steps with no verdict and told the model 30 steps."""
    session = environment_class("AgentWorld/Terminal-v0", backend="scripted",
                                max_episode_steps=2)()
    session.reset(seed=0, scenario="terminal-count-log-errors")
    assert session.last_info["max_steps"] == 2
    session.act(action='[{"keystrokes": "", "duration": 1}]')
    assert environment_reward(['[{"keystrokes": "", "duration": 1}]'], [session]) == [0.0]
    assert session.done and session.last_info["termination"] == "step_budget_exhausted"
    assert "reward_breakdown" in session.last_info
    session.env.close()


class OneToolEnv(gym.Env):
    """Offers one tool, named as asked, at every reset."""

    observation_space = action_space = gym.spaces.Text(64)

    def __init__(self, tool: str) -> None:
        self.tool = tool

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        return "Call the tool.", {"tools": [{"type": "function", "function": {
            "name": self.tool, "description": "A tool.", "parameters": {"type": "object"}}}]}

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        return "done", 1.0, True, False, {}


gym.register("TrlTest/OneTool-v0", entry_point=OneToolEnv, disable_env_checker=True)


@pytest.mark.parametrize("name", ["env", "tools", "done", "reward", "actions", "last_info",
                                  "env_id", "make_kwargs"])
def test_a_tool_named_like_a_session_attribute_is_refused(name: str) -> None:
    """Before, the session's own attribute hid the tool (or the tool replaced env_id)."""
    with pytest.raises(ValueError, match=f"tools named \\['{name}'\\], which EnvSession uses"):
        environment_class("TrlTest/OneTool-v0", tool=name)


@pytest.mark.parametrize(("tasks", "variants", "error"), [
    (["A11"], ["v0"], "unknown AgentFloor task 'A11'; did you mean 'A1' or 'A01'? (list them: "
                      "agentworld floor list)"),
    (["A1"], ["v99"], "task A1 has no variant 'v99'; it has ['v0', "),
])
def test_floor_rows_refuses_a_task_or_variant_that_does_not_exist(tasks: list[str],
                                                                  variants: list[str],
                                                                  error: str) -> None:
    """Before any row is made (an unknown task failed inside gymnasium at the first env, a
    variant only when the env was reset, after the model was built)."""
    with pytest.raises(ValueError) as info:
        floor_rows(tasks, variants)
    assert str(info.value).startswith(error)


def test_a_row_whose_options_are_not_a_dict_is_refused() -> None:
    session = environment_class("AgentFloor/A1-v0")()
    with pytest.raises(TypeError, match="a row's options must be a dict of reset options, not str"):
        session.reset(options="v0")
    session.env.close()


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny model imprinted with A1 v0's reference solution, in both tool renderings."""
    examples = solution_examples(floor_rows(["A1"], system_prompt=SYSTEM)[0])
    cls = environment_class("AgentFloor/A1-v0")
    examples += [{**e, "tools": [getattr(cls, t["function"]["name"]) for t in e["tools"]]}
                 for e in examples]
    directory = build_tiny_chat_model(tmp_path_factory.mktemp("tiny_trl"), examples)
    return imprint(directory, examples, steps=80, lr=3e-3)


def _train(model: Path, factory: Any, tmp_path: Path, **kwargs: Any) -> tuple[Any, list]:
    """Two GRPO steps on A1 v0 (the imprinted solution passes) and i1 (it fails)."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    seen: list[list[float]] = []

    def reward(completions: list, environments: list, **extra: Any) -> list[float]:
        seen.append(environment_reward(completions, environments))
        return seen[-1]

    config = GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, num_generations=2,
        max_completion_length=160, temperature=0.5, learning_rate=1e-3, report_to=[],
        logging_steps=1, save_strategy="no", use_cpu=True, disable_tqdm=True, seed=0)
    trainer = GRPOTrainer(
        model=str(model), args=config, processing_class=AutoTokenizer.from_pretrained(model),
        train_dataset=Dataset.from_list(floor_rows(["A1"], ["v0", "i1"], system_prompt=SYSTEM)),
        reward_funcs=[reward], environment_factory={"A1": factory}, **kwargs)
    trainer.train()
    return trainer, seen


def _check_run(trainer: Any, seen: list[list[float]]) -> None:
    calls = [c for env in trainer.environments for c in env.env.unwrapped.trace.calls]
    assert any(c["tool_name"] == "lookup_record" and c["status"] == "ok" for c in calls)
    assert len(seen) == 2 and all(len(r) == 4 for r in seen)
    assert {r for batch in seen for r in batch} == {0.0, 1.0}  # v0 passes, i1 fails
    logged = [h["reward"] for h in trainer.state.log_history if "reward" in h]
    assert logged == pytest.approx([sum(r) / 4 for r in seen])


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_grpo_through_environment_factory(tiny_model: Path, tmp_path: Path) -> None:
    trainer, seen = _train(tiny_model, environment_class("AgentFloor/A1-v0"), tmp_path)
    _check_run(trainer, seen)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_grpo_through_the_turn_level_rollout(tiny_model: Path, tmp_path: Path) -> None:
    trainer, seen = _train(tiny_model, turn_environment_class("AgentFloor/A1-v0"), tmp_path,
                           rollout_func=TurnRollout())
    _check_run(trainer, seen)
    for env in trainer.environments:  # one env.step per assistant turn, as in the harness
        turns = [c["turn"] for c in env.env.unwrapped.trace.calls]
        assert turns == list(range(1, len(turns) + 1)) and env.done


class ToolBackendDown(gym.Wrapper):
    """A1 whose tools' backend is down: a tool call's step raises, a final answer is scored."""

    def step(self, action: str) -> tuple:
        if action.startswith('{"name"'):
            raise ConnectionError("the tool backend is unreachable")
        return self.env.step(action)


gym.register("TrlTest/A1ToolsDown-v0", disable_env_checker=True,
             entry_point=lambda: ToolBackendDown(gym.make("AgentFloor/A1-v0")))


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_backend_fault_in_trls_tool_loop_stops_training(tiny_model: Path,
                                                          tmp_path: Path) -> None:
    """Before, TRL showed the model ``{"error": "the tool backend is unreachable"}``, scored
    the episode and trained on it: the fault never reached the user."""
    with pytest.raises(ConnectionError, match="the tool backend is unreachable"):
        _train(tiny_model, environment_class("TrlTest/A1ToolsDown-v0"), tmp_path)


def test_building_and_imprinting_a_tiny_model_leaves_the_callers_torch_draws_alone(
        tmp_path: Path) -> None:
    """Both are seeded by their own ``seed`` and restore the global generator after."""
    import torch

    examples = [{"messages": [{"role": "user", "content": "hi"}], "reply": "the record"}]
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    directory = build_tiny_chat_model(tmp_path, examples, seed=7)
    imprint(directory, examples, steps=2, seed=7)
    assert torch.equal(torch.rand(3), expected)


class _LookupForever:
    """A stand-in for ``GRPOTrainer`` whose model always looks a record up (never answers),
    with a context of ``context`` tokens; it records the sequences it was asked to extend."""

    def __init__(self, tokenizer: Any, context: int, budget: int) -> None:
        from types import SimpleNamespace

        self.processing_class, self.chat_template_kwargs = tokenizer, {}
        self.eos_token_ids = [tokenizer.eos_token_id]
        self.model = SimpleNamespace(training=False,
                                     config=SimpleNamespace(max_position_embeddings=context))
        self.args, self.use_vllm = SimpleNamespace(vllm_max_model_length=None), False
        self.max_completion_length, self.num_generations = budget, 2
        self.reply = tokenizer('<tool_call>{"name": "lookup_record", "arguments": {"record_id": '
                               '"R-1"}}</tool_call>', add_special_tokens=False)["input_ids"]
        self.asked: list[int] = []

    def _generate_single_turn(self, prompts: list, *_: Any) -> tuple[list, None]:
        self.asked += [len(p) for p in prompts]
        return [list(self.reply) for _ in prompts], None


def _rollout(tiny_lm_dir: Path, context: int, budget: int, keep_open: bool = False
             ) -> tuple[dict[str, Any], Any]:
    """Two A1 episodes of a model that always looks a record up, in ``context`` tokens with
    turns of at most ``budget`` (with ``keep_open``, their envs are left open)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_lm_dir)
    rows = floor_rows(["A1"], ["v0"], system_prompt=SYSTEM) * 2
    sessions = [turn_environment_class("AgentFloor/A1-v0", max_episode_steps=50)()
                for _ in rows]
    prompts = [[*row["prompt"][:-1], {"role": "user", "content": session.reset(**row)}]
               for row, session in zip(rows, sessions, strict=True)]
    trainer = _LookupForever(tokenizer, context=context, budget=budget)
    trainer.environments = sessions
    try:
        return TurnRollout()(prompts, trainer), trainer
    finally:
        for session in sessions if not keep_open else ():
            session.env.close()


def test_the_turn_rollout_stops_an_episode_before_it_outgrows_the_context(
        tiny_model: Path) -> None:
    """An episode whose next turn would not fit the model's context is left unfinished (and
    scores 0.0, as an episode TRL cut short), not decoded past the positions the model knows."""
    # prompts of 256 tokens, 169 more a turn: a third turn of up to 400 would pass the context
    # of 900, while the episodes still had room in their budget of 400
    out, trainer = _rollout(tiny_model, context=900, budget=400, keep_open=True)
    sessions, tokenizer = trainer.environments, trainer.processing_class
    assert trainer.asked and max(trainer.asked) + 400 <= 900  # every turn fitted
    assert len(trainer.asked) > 2  # more than one turn was played
    assert all(len(ids) < 400 for ids in out["completion_ids"])  # the context stopped them
    assert not any(session.done for session in sessions)
    texts = [tokenizer.decode(ids, skip_special_tokens=True) for ids in out["completion_ids"]]
    assert environment_reward(texts, sessions) == [0.0, 0.0]
