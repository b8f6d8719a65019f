"""reasoning-gym's procedural tasks as text teams (``team_envs/reasoning-v0``).

``task=`` names any dataset of the ``reasoning-gym`` package (``basic_arithmetic``,
``chain_sum``, ``gsm_symbolic``, ...; ``config=`` holds its settings). The team discusses the
question in the shared context; the last agent's answer, read after its last ``ANSWER:``, is
scored by the dataset's own ``score_answer``, clamped to [0, 1] (NaN counts as 0).

Some answers are not given to the scorer and score 0, the reason in
``info["verdict"]["error"]``: an empty one, unless the reference answer is empty (no answer;
several scorers give "" format credit, arc_agi 0.05 where an unreadable board scores 0); and, so
that a step stays safe and quick, one longer than both 4,000
characters (200 for propositional_logic, whose scorer takes time quadratic in it) and twice the
reference answer; one holding a number with an exponent of five
or more digits (``1e99999``: the scorers expand it exactly); for the datasets whose scorers
``eval`` the answer (binary_matrix, n_queens, spiral_matrix, string_insertion) one that is
Python code beyond literals and names; for those that evaluate it with sympy (countdown, puzzle24,
polynomial_multiplication, simple_integration, intermediate_integration) one that is not an
arithmetic expression (numbers, names, ``+ - * / **``; for the integrations, calls of ``sin``,
``exp``, ``Integral`` and the like) with number or name exponents, or is larger (in nodes, powers
expanded: ``(x + 1)**8`` counts 24) than both 100 and twice the reference answer. An error the
scorer raises also scores 0.

Held-out items are really unseen: the first ``held_out`` distinct items of the dataset are the
evaluation set (``reset(options={"split": "test", "index": i})``), kept from construction on,
and a training episode draws any other item that is not one of theirs. Two items are the same
when they share a key (:func:`item_keys`), reasoning-gym's datasets being too varied for one:

- the question, its whitespace removed and its case folded: the same item however spaced
  (basic_arithmetic's ``whitespace="random"``);
- the reference answer, the metadata and the numbers of the question in order, every string
  in them likewise compacted; the metadata without its bookkeeping (``source_dataset``,
  ``source_index``, ``source_idx``), and only when it holds more than ``difficulty`` (the
  parameters reasoning-gym keeps of an item, like basic_arithmetic's ``expression``): the same
  item however worded (``format_style="natural"``, or another question template). The numbers
  tell apart items whose metadata holds no more than a kind (aiw's ``task_type``, game_of_life's
  sizes); without metadata (acre, zebra_puzzles) the answer alone would match unrelated items.
- the metadata's ``expression``, where Python reads one, as its syntax tree: the same item
  however bracketed where brackets change nothing (basic_arithmetic's ``( -9 / 9 )`` and
  ``-9 / 9``).

An item repeated within the first items is held out once (the next distinct item takes its
place). A dataset that generates an item differently twice is refused, and, also as a
``composite``'s part, list_functions (it draws from Python's global ``random``) and
game_of_life_halting (its scorer gives any answer but an empty one 1: it compares the answers'
truth values, and any text is true) always.

Example:
    >>> from team_envs.text import reasoning
    >>> env = reasoning.env(task="basic_arithmetic", n_agents=2)
    >>> env.reset(seed=0, options={"split": "test", "index": 0})
    >>> env.unwrapped.episode.problem.statement.startswith("Calculate")
    True
"""

from __future__ import annotations

import ast
import difflib
import json
import math
import os
import re
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
from pettingzoo import AECEnv

from team_envs.core import SharedContextEnv, SharedContextParallelEnv, check_int, wrap
from team_envs.text.base import Problem, ReasoningEpisode, ReasoningTask

__all__ = ["ReasoningGymTask", "env", "item_keys", "raw_env", "parallel_env"]

_DRAWS = 100
"""Training draws tried before a task is declared too small to hold out ``held_out`` items."""
_MAX_ANSWER_CHARS = 4000
_SHORT_ANSWERS = {"propositional_logic": 200}
"""Datasets whose scorers take time quadratic in the answer (reasoning-gym 0.1.19: 4,000
characters of ``¬`` take seconds), with the longest answer they are given."""
_ANSWER_PREFIX = "ANSWER: "
_MAX_EXPRESSION_SIZE = 100
_MAX_KEYED_EXPRESSION = 1000
"""Longest ``expression`` of an item's metadata that is parsed into its key."""
_BIG_EXPONENT = re.compile(r"(?<![\w.])(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)[eE][+-]?\d[\d_]{4,}")
# Datasets (reasoning-gym 0.1.19) whose scorers eval the answer as Python, and those whose
# scorers evaluate it with sympy's parse_expr (which evals too), with the functions it may call.
_PYTHON_EVAL = frozenset({"binary_matrix", "n_queens", "spiral_matrix", "string_insertion"})
_CALCULUS = frozenset({"sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
                       "exp", "log", "sqrt", "Integral"})
_SYMPY = {"countdown": frozenset(), "puzzle24": frozenset(),
          "polynomial_multiplication": frozenset(), "simple_integration": _CALCULUS,
          "intermediate_integration": _CALCULUS}
_BOOKKEEPING = frozenset({"source_dataset", "source_index", "source_idx"})
"""Metadata of where an item sits in its dataset, not what it is."""
_HASH_DEPENDENT = frozenset({"isomorphic_strings", "knight_swap", "polynomial_multiplication",
                             "ransom_note", "word_ladder"})
"""Datasets whose items depend on Python's string hashing (reasoning-gym 0.1.19): their
questions, or their reference answers (knight_swap's and word_ladder's solution paths)."""
_UNSEEDED = frozenset({"list_functions"})
"""Datasets that draw from Python's global ``random`` (reasoning-gym 0.1.19 to 0.1.26): some of
their items differ in every process and every time they are generated."""
_SCORES_ANYTHING = frozenset({"game_of_life_halting"})
"""Datasets whose scorer gives every non-empty answer 1 (reasoning-gym 0.1.24 to 0.1.26:
``bool(answer) == bool(reference)``, and ``"False"`` and ``"banana"`` are both true)."""
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
_SIGNS = (ast.UAdd, ast.USub)
_LITERALS = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.List, ast.Tuple, ast.Set,
             ast.Dict, ast.UnaryOp, *_SIGNS)


def _exponent(node: ast.AST) -> float:
    """How many times a power repeats its base: a number's size, 1 for a name, or a ratio."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return abs(float(node.value))
    if isinstance(node, ast.Name) and not node.id.startswith("_"):
        return 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, _SIGNS):
        return _exponent(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        return _exponent(node.left) / _exponent(node.right)
    raise ValueError("exponents are numbers or names")


def _size(node: ast.AST, functions: frozenset[str]) -> float:
    """Nodes of an arithmetic expression, powers expanded; ValueError for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, complex):
        return 1.0
    if isinstance(node, ast.Name) and not node.id.startswith("_"):
        return 1.0
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, _SIGNS):
        return 1 + _size(node.operand, functions)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
        return 1 + _size(node.left, functions) + _size(node.right, functions)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _size(node.left, functions) * max(1.0, _exponent(node.right))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in functions and not node.keywords):
        return 1 + sum(_size(arg, functions) for arg in node.args)
    raise ValueError(f"{type(node).__name__} is not arithmetic")


def _expression_size(text: str, functions: frozenset[str]) -> float | None:
    """:func:`_size` of ``text``; None when it is not an arithmetic expression."""
    try:
        return _size(ast.parse(text.strip(), mode="eval").body, functions)
    except Exception:  # SyntaxError, ValueError, RecursionError, ZeroDivisionError, ...
        return None


def _runs_code(answer: str) -> bool:
    """Whether ``eval(answer)`` would run code: Python (as ``eval`` reads it) beyond literals
    and names."""
    try:
        tree = ast.parse(answer.lstrip(" \t"), mode="eval")
    except Exception:  # eval refuses it too
        return False
    return not all(isinstance(node, _LITERALS) for node in ast.walk(tree))


def _refusal(dataset: str, answer: str, reference: str) -> str:
    """Why ``answer`` is not given to ``dataset``'s scorer ("" when it is)."""
    if not answer and reference:
        return "no answer"
    limit = max(_SHORT_ANSWERS.get(dataset, _MAX_ANSWER_CHARS), 2 * len(reference))
    if len(answer) > limit:
        return f"answer longer than {limit} characters"
    if _BIG_EXPONENT.search(answer):
        return "a number with an exponent of five or more digits"
    if dataset in _PYTHON_EVAL and _runs_code(answer):
        return "Python code, which the scorer would run"
    if dataset in _SYMPY:
        size = _expression_size(answer, _SYMPY[dataset])
        if size is None:
            return "not an arithmetic expression the scorer can safely evaluate"
        bound = max(_MAX_EXPRESSION_SIZE, 2 * (_expression_size(reference, _SYMPY[dataset]) or 0))
        if size > bound:
            return f"expression larger than {bound} nodes (powers expanded)"
    return ""


def _compact(value: Any) -> Any:
    """``value`` with the whitespace of every string in it removed and its case folded."""
    if isinstance(value, str):
        return "".join(value.split()).casefold()
    if isinstance(value, Mapping):
        return {str(k): _compact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_compact(v) for v in value]
    return value


def _syntax(expression: str) -> str | None:
    """The syntax tree of an arithmetic expression, as text: the same however it is bracketed
    where brackets change nothing (``( -9 / 9 )`` and ``-9 / 9``); None where Python reads no
    expression."""
    if len(expression) > _MAX_KEYED_EXPRESSION:
        return None
    try:
        return ast.dump(ast.parse(expression.strip(), mode="eval"))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def item_keys(entry: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The keys of a reasoning-gym item: two items that share one are the same item (see the
    module notes)."""
    keys = {("question", _compact(entry["question"]))}
    metadata = {k: v for k, v in entry.get("metadata", {}).items() if k not in _BOOKKEEPING}
    if set(metadata) - {"difficulty"}:
        content = [entry["answer"], metadata, re.findall(r"\d+", entry["question"])]
        keys.add(("content", json.dumps(_compact(content), default=str)))
    expression = metadata.get("expression")
    if isinstance(expression, str) and (syntax := _syntax(expression)) is not None:
        keys.add(("expression", syntax))
    return keys


def _reasoning_gym() -> Any:
    try:
        import reasoning_gym
    except ImportError as error:
        raise ImportError("team_envs/reasoning-v0 needs reasoning-gym: "
                          "pip install 'agentworld[reasoning]'") from error
    return reasoning_gym


class ReasoningGymTask(ReasoningTask):
    """A reasoning-gym dataset, with a held-out evaluation set.

    Args:
        task: A reasoning-gym dataset name.
        config: The dataset's settings (reasoning-gym's config fields, ``seed`` and ``size``
            excepted).
        held_out: Items kept for evaluation, never drawn in training.
        max_message_chars: As in :class:`~team_envs.text.base.TextTeamTask`, but never
            shorter than ``ANSWER: `` and the item's reference answer (see
            :meth:`message_limit`).
        size: The dataset's size, held-out items included (some datasets build per-item
            tables of this size at construction; reasoning-gym's word_ladder allows 20,000).
        dataset_seed: The dataset's seed: which items exist and which are held out. Neighbouring
            seeds share nearly all items (reasoning-gym draws item i of seed s from
            ``Random(s + i)``), so another seed is no fresh evaluation set.
        **kwargs: See :class:`~team_envs.text.base.TextTeamTask`.

    Datasets whose items depend on Python's string hashing (isomorphic_strings, knight_swap,
    polynomial_multiplication, ransom_note, word_ladder; also as parts of a ``composite``) give
    the same items, held-out ones included, in every process only with the same
    ``PYTHONHASHSEED``; without one they warn.
    """

    family = "reasoning"

    def __init__(self, task: str = "basic_arithmetic", config: Mapping[str, Any] | None = None,
                 held_out: int = 64, size: int = 10_000, dataset_seed: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        gym = _reasoning_gym()
        names = sorted(gym.factory.DATASETS)
        if task not in names:
            near = difflib.get_close_matches(task, names, n=1) if isinstance(task, str) else []
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ValueError(f"task must be a reasoning-gym dataset, not {task!r}{hint} "
                             f"({len(names)} datasets: reasoning_gym.factory.DATASETS)")
        if config is not None and not isinstance(config, Mapping):
            raise ValueError(f"config must be a dict of {task}'s settings, got {config!r}")
        config = dict(config or {})
        if {"seed", "size"} & set(config):
            raise ValueError("config must not set seed or size: use dataset_seed and size "
                             "(the items) and held_out (the evaluation set)")
        held_out = check_int("held_out", held_out, 1)
        size = check_int("size", size, held_out + 1)
        dataset_seed = check_int("dataset_seed", dataset_seed, 0)
        try:
            self.dataset = gym.create_dataset(task, seed=dataset_seed, size=size, **config)
        except (TypeError, ValueError, AssertionError, AttributeError, KeyError) as error:
            raise ValueError(f"reasoning-gym refused {task} with config {config}: "
                             f"{error}") from error
        parts = self.dataset.datasets if task == "composite" else [task]
        if unseeded := sorted(_UNSEEDED.intersection(parts)):
            raise ValueError(f"reasoning-gym's {', '.join(unseeded)} is not "
                             f"deterministic: it draws from Python's global random, so its "
                             f"items differ in every process; use another dataset")
        if lax := sorted(_SCORES_ANYTHING.intersection(parts)):
            raise ValueError(f"reasoning-gym's {', '.join(lax)} scores every non-empty answer 1 "
                             f"(its scorer compares truth values, and any text is true): "
                             f"training on it rewards anything; use another dataset")
        self.task = task
        self.held_out = held_out
        self._held_out: list[dict[str, Any]] = []
        self._held_out_keys: set[tuple[str, str]] = set()
        for index in range(size):
            if len(self._held_out) == held_out:
                break
            entry = self.dataset[index]
            if index < 2:  # generated again, an item must come out the same
                again = self.dataset[index]
                if (again["question"], again["answer"]) != (entry["question"], entry["answer"]):
                    raise ValueError(f"reasoning-gym's {task} is not deterministic: item {index} "
                                     f"came out differently when generated again, so its "
                                     f"held-out items cannot be kept out of training; choose "
                                     f"another task")
            keys = item_keys(entry)
            if not keys & self._held_out_keys:
                self._held_out.append(entry)
            self._held_out_keys |= keys  # a repeat's keys too: its other wordings
        if len(self._held_out) < held_out:
            raise ValueError(f"{task} has {len(self._held_out)} distinct items in its {size}, "
                             f"fewer than held_out={held_out}: hold out fewer")
        hashed = sorted(_HASH_DEPENDENT.intersection(parts))
        if hashed and os.environ.get("PYTHONHASHSEED", "random") == "random":
            warnings.warn(f"reasoning-gym's {', '.join(hashed)} items depend on Python's string "
                          f"hashing: set PYTHONHASHSEED, the same in every process, for the same "
                          f"items and held-out set in every process", stacklevel=2)

    def generate(self, rng: np.random.Generator) -> Problem:
        """A training item: any index from ``held_out`` on whose item is not held out."""
        for _ in range(_DRAWS):
            index = int(rng.integers(self.held_out, len(self.dataset)))
            entry = self.dataset[index]
            if not item_keys(entry) & self._held_out_keys:
                return self._problem(entry, index, "train")
        raise ValueError(f"{self.task}: {_DRAWS} draws all repeated a held-out item; the "
                         f"task has too few distinct items for held_out={self.held_out}")

    def held_out_problem(self, index: int) -> Problem:
        """Held-out item ``index`` (0 to ``held_out - 1``), as generated at construction."""
        index = check_int("index", index, 0, self.held_out - 1)
        return self._problem(self._held_out[index], index, "test")

    def _problem(self, entry: dict[str, Any], index: int, split: str) -> Problem:
        return Problem(entry["question"], ("",) * self.n_agents, entry["answer"],
                       {"entry": entry, "index": index, "split": split})

    def new_episode(self, rng: np.random.Generator,
                    options: dict[str, Any] | None = None) -> ReasoningEpisode:
        """A training item, or with ``options={"split": "test", "index": i}`` held-out item
        ``i``."""
        options = options or {}
        split = options.get("split", "train")
        if split == "test":
            return ReasoningEpisode(self, self.held_out_problem(options.get("index", 0)))
        if split != "train":
            raise ValueError(f"options['split'] must be 'train' or 'test', got {split!r}")
        if "index" in options:
            raise ValueError("options['index'] picks a held-out item: pass it with "
                             "options['split'] = 'test'")
        return ReasoningEpisode(self, self.generate(rng))

    def message_limit(self, problem: Problem) -> int:
        """``max_message_chars``, raised for an item whose reference answer would not fit (some
        of tower_of_hanoi's and palindrome_partitioning's pass 4,000 characters) to hold
        ``ANSWER: `` and that answer: a message of the correct answer alone is never cut."""
        return max(self.max_message_chars, len(_ANSWER_PREFIX) + len(str(problem.answer)))

    def check(self, problem: Problem, answer: str) -> tuple[float, dict[str, Any]]:
        """The dataset's own ``score_answer`` in [0, 1]; 0, with the ``error``, for an answer it
        is not given (see the module notes) or that makes it raise."""
        entry = problem.details["entry"]
        details = {"expected": problem.answer, "given": answer}
        source = entry.get("metadata", {}).get("source_dataset", self.task)
        error = _refusal(source, answer, str(problem.answer))
        if error:
            return 0.0, {**details, "error": error}
        try:
            score = float(self.dataset.score_answer(answer, entry))
        except Exception as exc:  # reasoning-gym's scorers raise on many malformed answers
            return 0.0, {**details, "error": f"the scorer raised {type(exc).__name__}: "
                                              f"{str(exc)[:200]}"}
        return (0.0 if math.isnan(score) else min(max(score, 0.0), 1.0)), details


class raw_env(SharedContextEnv):
    """reasoning-gym tasks as an AEC env, without wrappers."""

    metadata = {**SharedContextEnv.metadata, "name": "reasoning_v0"}
    task_type = ReasoningGymTask


def env(**kwargs: Any) -> AECEnv:
    """reasoning-gym tasks as a wrapped AEC env."""
    return wrap(raw_env(**kwargs))


def parallel_env(**kwargs: Any) -> SharedContextParallelEnv:
    """reasoning-gym tasks in turn-based Parallel form."""
    return SharedContextParallelEnv(raw_env(**kwargs))
