"""CTranslate2 engine for the in-process backend: greedy decoding of the merged model, converted
once and cached.

On a CPU eager torch decoding is memory-bound (each step reads all the weights through many
small kernels); CTranslate2 runs the same float32 weights through fused kernels. The model,
its adapter merged, is converted with CTranslate2's transformers converter into
``<cache_dir()>/ctranslate2/<model folder>-<fingerprint>``, the fingerprint covering the model
folder, the adapter folder and the CTranslate2 version. The folder appears whole or not at all
(converted beside it, then renamed) and ends with a mark listing its files' sizes; a folder
without a valid mark, or that CTranslate2 cannot load, is moved aside and converted again.

Only greedy requests without extra generation settings run here (``generate_batch`` with
``include_prompt_in_result=False``); the backend keeps its torch path for the others, seeded
sampling included (a seed per request, whatever the batch, which CTranslate2's one global
seed cannot give).
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentworld_envs.atomic_write import write_text_atomic

__all__ = ["ENGINES", "CT2Engine", "converted_dir", "length_groups"]

ENGINES = ("torch", "ctranslate2")
"""The values of the ``hf`` backend's ``engine``."""
_HINT = 'engine="ctranslate2" needs ctranslate2: pip install "agentworld[hf]"'
ANSWER = 128
"""Answer tokens a greedy request is expected to take (a world model's observation is about
110), for grouping prompts by length."""
_MARK = "agentworld-ct2.json"
"""Written last into a converted folder: its files and their sizes."""


def _import_ct2() -> Any:
    try:
        import ctranslate2
    except ImportError as exc:
        raise ImportError(_HINT) from exc
    return ctranslate2


def _fingerprint(ct2_version: str, *folders: str | None) -> str:
    """A digest of the CTranslate2 version and every file's path and bytes under ``folders``
    (a name that is no folder counts as its text)."""
    sha = hashlib.sha256(ct2_version.encode())
    for folder in folders:
        root = Path(folder) if folder else None
        if root is None or not root.is_dir():
            sha.update(f"\0name:{folder}".encode())
            continue
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            sha.update(f"\0{path.relative_to(root).as_posix()}\0".encode())
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    sha.update(block)
    return sha.hexdigest()[:16]


def _complete(folder: Path) -> bool:
    """Whether ``folder`` holds a finished conversion: a mark whose files all have their
    sizes."""
    try:
        sizes = json.loads((folder / _MARK).read_text())["sizes"]
        return bool(sizes) and all((folder / name).stat().st_size == size
                                   for name, size in sizes.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _discard(folder: Path) -> None:
    """Move ``folder`` aside (one rename, so a process reading it never sees it half gone),
    then delete it; gone already is fine."""
    trash = folder.with_name(f".{folder.name}-discarded-{uuid.uuid4().hex[:8]}")
    try:
        folder.rename(trash)
    except FileNotFoundError:
        return
    shutil.rmtree(trash, ignore_errors=True)


def converted_dir(model: Any, folder: str, adapter: str | None) -> Path:
    """The CTranslate2 conversion of ``model`` (loaded from ``folder``, ``adapter`` merged
    into it), from the cache or converted now."""
    ctranslate2 = _import_ct2()
    from agentworld_envs.models.pretrained import cache_dir

    key = _fingerprint(ctranslate2.__version__, folder, adapter)
    out = cache_dir() / "ctranslate2" / f"{Path(folder).name}-{key}"
    if _complete(out):
        return out
    _discard(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        _converter(ctranslate2, folder, model).convert(str(staging), force=True)
        sizes = {p.name: p.stat().st_size for p in staging.iterdir() if p.is_file()}
        write_text_atomic(staging / _MARK, json.dumps({"sizes": sizes}, sort_keys=True))
        try:
            staging.rename(out)
        except OSError:
            if not _complete(out):  # not another process's finished copy
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def _converter(ctranslate2: Any, folder: str, model: Any) -> Any:
    """CTranslate2's transformers converter reading ``folder``'s config and tokenizer but a
    copy of the live (merged) ``model`` instead of the folder's weights (the converter
    takes the layers it has read apart)."""
    from ctranslate2.converters import TransformersConverter

    class _Live(TransformersConverter):
        def load_model(self, model_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
            return copy.deepcopy(model)

    return _Live(folder)


class CT2Engine:
    """Greedy decoding of token-id prompts with a CTranslate2 generator.

    Args:
        path: A converted folder (:func:`converted_dir`).
        device: ``"cpu"``, ``"cuda"`` or ``"cuda:N"``.
        compute_type: A CTranslate2 compute type such as ``"float32"``.
        threads: Threads of one generation (CTranslate2's ``intra_threads``).
    """

    def __init__(self, path: Path, device: str, compute_type: str, threads: int) -> None:
        ctranslate2 = _import_ct2()
        kind, _, index = device.partition(":")
        self.path = path
        self._generator = ctranslate2.Generator(str(path), device=kind,
                                                device_index=int(index or 0),
                                                compute_type=compute_type,
                                                intra_threads=threads)
        self._vocabulary = json.loads((path / "vocabulary.json").read_text(encoding="utf-8"))
        if len(set(self._vocabulary)) != len(self._vocabulary):
            raise ValueError(f"{path}: the vocabulary repeats a token, so token ids cannot "
                             f"be passed to CTranslate2 as tokens; use engine='torch'")

    @classmethod
    def build(cls, model: Any, folder: str, adapter: str | None, device: str,
              compute_type: str, threads: int) -> CT2Engine:
        """The engine of ``model``: converted or taken from the cache; a cached folder that
        does not load is converted again."""
        path = converted_dir(model, folder, adapter)
        try:
            return cls(path, device, compute_type, threads)
        except (RuntimeError, ValueError, OSError):
            _discard(path)
            return cls(converted_dir(model, folder, adapter), device, compute_type, threads)

    def decode(self, prompts: Sequence[list[int]], max_new_tokens: int,
               eos_ids: set[int]) -> list[list[int]]:
        """The greedy new tokens of each prompt, up to and including its first end token: one
        ``generate_batch`` per group of :func:`length_groups`, and one for the one-token
        prompts (beside a longer prompt CTranslate2 4.8 returns that prompt's rest too)."""
        new: list[list[int]] = [[] for _ in prompts]
        single = [i for i, p in enumerate(prompts) if len(p) == 1]
        longer = [i for i, p in enumerate(prompts) if len(p) > 1]
        groups = [[longer[j] for j in group] for group in length_groups(
            [len(prompts[i]) for i in longer], min(max_new_tokens, ANSWER))]
        for group in [single] * bool(single) + groups:
            rows = [prompts[i] for i in group]
            for i, row in zip(group, self._generate(rows, max_new_tokens, eos_ids), strict=True):
                new[i] = row
        return new

    def _generate(self, prompts: list[list[int]], max_new_tokens: int,
                  eos_ids: set[int]) -> list[list[int]]:
        """One ``generate_batch`` (CTranslate2 feeds the prompts' first ``shortest`` tokens at
        once, then each longer prompt's rest one token per step)."""
        results = self._generator.generate_batch(
            [[self._vocabulary[i] for i in prompt] for prompt in prompts],
            max_length=max_new_tokens, end_token=sorted(eos_ids), return_end_token=True,
            include_prompt_in_result=False, beam_size=1, sampling_topk=1)
        return [list(result.sequences_ids[0]) for result in results]


def length_groups(lengths: Sequence[int], answer: int) -> list[list[int]]:
    """Indices of prompts of ``lengths`` in groups decoded together, fewest decode steps in
    all: a group of prompts whose lengths span ``d`` tokens takes about ``d + answer`` steps
    (its longer prompts' rest is fed one token per step), each costing about the same,
    memory-bound, whatever the group's size.

    Example:
        >>> length_groups([300, 10, 12, 305, 11], answer=100)
        [[1, 4, 2], [0, 3]]
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    ordered = [lengths[i] for i in order]
    best = [0] + [0] * len(order)  # best[j]: fewest steps of the first j prompts
    cut = [0] * (len(order) + 1)
    for j in range(1, len(order) + 1):
        best[j], cut[j] = min((best[i] + ordered[j - 1] - ordered[i] + answer, i)
                              for i in range(j))
    groups = []
    j = len(order)
    while j:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]
