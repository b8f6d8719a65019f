"""Prompt sets: the world model's system prompts and the judge's, per domain.

A prompt set is either the built-in one (each domain's own ``prompt.txt``, read by the domain)
or a directory laid out as Qwen-AgentWorld's released ``prompts/`` folder::

    DIR/<domain>/system_prompt.txt          the world model's system prompt template
    DIR/<domain>/judge_system_prompt.txt    the bench judge's system prompt

with ``<domain>`` one of ``mcp``, ``search``, ``terminal``, ``swe``, ``android``, ``web``, ``os``
(the desktop domain), or a Qwen-AgentWorld checkout, whose ``prompts/`` folder is then used. The
texts are the user's copy: nothing of the release is shipped here.
``AGENTWORLD_PROMPTS`` names the default directory; an explicit setting wins over it.

Example:
    >>> PromptSet.builtin().is_builtin
    True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agentworld_envs.world.scenario import DOMAIN_KEYS

__all__ = ["ENV_VAR", "RELEASE_DOMAINS", "PromptSet", "PromptSetError", "resolve_prompt_set"]

ENV_VAR = "AGENTWORLD_PROMPTS"
RELEASE_DOMAINS = tuple(key for key in DOMAIN_KEYS if key != "floor")
"""The domains the release has prompts for (``floor`` is ours and always uses ours)."""


class PromptSetError(ValueError):
    """A prompt directory that is missing, or lacks a file that was asked for."""


@dataclass(frozen=True)
class PromptSet:
    """Where system prompts come from: ``root`` is a release-layout directory, or None."""

    root: Path | None = None

    @classmethod
    def builtin(cls) -> PromptSet:
        """Our own prompts, the default for models not trained on the release's."""
        return cls(None)

    @classmethod
    def from_dir(cls, path: str | os.PathLike[str]) -> PromptSet:
        """A directory in the release's layout, or a checkout holding one as ``prompts/``;
        raises :class:`PromptSetError` if it is absent."""
        root = Path(path).expanduser()
        if not root.is_dir():
            raise PromptSetError(f"prompt directory {str(root)!r} does not exist")
        if (root / "prompts").is_dir() and (root / "eval").is_dir():
            root = root / "prompts"
        return cls(root.resolve())

    @property
    def is_builtin(self) -> bool:
        return self.root is None

    def uses_release_layout(self, domain: str) -> bool:
        """Whether ``domain``'s world-model prompt comes from the directory."""
        return self.root is not None and domain in RELEASE_DOMAINS

    def system_prompt(self, domain: str) -> str | None:
        """The world model's system-prompt template for ``domain`` from the directory; None
        where the domain's own prompt applies (the built-in set, or a domain the release lacks)."""
        if not self.uses_release_layout(domain):
            return None
        return self._read(domain, "system_prompt.txt")

    def judge_system_prompt(self, domain: str) -> str | None:
        """The judge's system prompt for ``domain`` from the directory; None for the built-in set.

        A directory without a judge prompt for a release domain is an error; a domain the
        release does not know gets ``""``, as the release's evaluation gives it.
        """
        if self.root is None:
            return None
        if domain not in RELEASE_DOMAINS:
            return ""
        return self._read(domain, "judge_system_prompt.txt")

    def _read(self, domain: str, name: str) -> str:
        assert self.root is not None
        path = self.root / domain / name
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PromptSetError(f"prompt set {str(self.root)!r} has no {domain}/{name}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptSetError(f"cannot read {str(path)!r}: {exc}") from None

    def describe(self) -> str:
        """``builtin`` or the directory, for ``info`` and run metadata."""
        return "builtin" if self.root is None else str(self.root)


def resolve_prompt_set(value: str | os.PathLike[str] | PromptSet | None = None) -> PromptSet:
    """The prompt set a setting names: a :class:`PromptSet`, ``"builtin"``, a directory, or None.

    None falls back to ``$AGENTWORLD_PROMPTS``, then to the built-in set; an empty name is a
    :class:`PromptSetError`, not the current directory.
    """
    if isinstance(value, PromptSet):
        return value
    if value is None:
        value = os.environ.get(ENV_VAR) or None
    if value is None or str(value) == "builtin":
        return PromptSet.builtin()
    if not str(value).strip():
        raise PromptSetError('an empty prompts setting names no directory (None or "builtin" '
                             "is the built-in set)")
    return PromptSet.from_dir(value)
