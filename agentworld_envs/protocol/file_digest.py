"""A file's SHA-256, read a block at a time (``hashlib.file_digest`` needs Python 3.11)."""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["file_sha256"]


def file_sha256(path: str | Path) -> str:
    """The hex SHA-256 of the bytes of the file at ``path``."""
    sha = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()
