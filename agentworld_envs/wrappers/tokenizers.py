"""Tokenizers that turn text into integer ids, for token-id observations.

Two kinds are built in: ``"bytes"``, a dependency-free byte-level tokenizer (one id per UTF-8
byte, vocabulary 256), and any Hugging Face tokenizer, named by hub id or local path and loaded
lazily with ``transformers`` (``pip install transformers``).

Example:
    >>> tokenizer = load_tokenizer("bytes")
    >>> tokenizer.vocab_size, tokenizer.encode("hé!")
    (256, [104, 195, 169, 33])
"""

from __future__ import annotations

import os
from typing import Protocol

from gymnasium.error import DependencyNotInstalled

__all__ = ["ByteTokenizer", "HFTokenizer", "Tokenizer", "load_tokenizer"]


class Tokenizer(Protocol):
    """What an observation tokenizer offers: a vocabulary size and ``encode``."""

    vocab_size: int
    """Ids are ``0 .. vocab_size - 1``."""

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without special tokens."""


class ByteTokenizer:
    """One id per UTF-8 byte of the text: no dependency, no out-of-vocabulary input."""

    vocab_size = 256

    def encode(self, text: str) -> list[int]:
        """The UTF-8 bytes of ``text`` (unpaired surrogates become ``?``)."""
        return list(text.encode("utf-8", errors="replace"))


class HFTokenizer:
    """A Hugging Face tokenizer, loaded with ``AutoTokenizer.from_pretrained``.

    Args:
        name_or_path: Hub id or local directory of the tokenizer.
    """

    def __init__(self, name_or_path: str) -> None:
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise DependencyNotInstalled(
                f"tokenizer {name_or_path!r} needs transformers: pip install transformers "
                '(or pip install "agentworld[hf]"), or use tokenizer="bytes"') from exc
        self._tokenizer = AutoTokenizer.from_pretrained(name_or_path)
        self.vocab_size = len(self._tokenizer)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without special tokens (unpaired surrogates, which the
        tokenizer refuses, become ``?`` as in :class:`ByteTokenizer`)."""
        text = text.encode("utf-8", errors="replace").decode("utf-8")
        return list(self._tokenizer(text, add_special_tokens=False)["input_ids"])


def load_tokenizer(name: str | os.PathLike[str]) -> Tokenizer:
    """``"bytes"`` for :class:`ByteTokenizer`; any other text or path names a Hugging Face
    tokenizer (anything else raises ``ValueError``, before a download is tried)."""
    if not isinstance(name, str | os.PathLike) or name == "":
        raise ValueError(f"tokenizer must be 'bytes' or a Hugging Face tokenizer's hub id or "
                         f"folder, got {name!r}")
    return ByteTokenizer() if name == "bytes" else HFTokenizer(os.fspath(name))
