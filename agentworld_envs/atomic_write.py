"""Files written whole or not at all: the text goes to a hidden temporary name, then a rename."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` by a rename; returns the path.

    A failure (an unencodable character, a full disk, Ctrl-C) leaves the old file, or none,
    never part of one.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding=encoding)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path
