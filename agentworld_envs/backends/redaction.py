"""Keep credentials out of everything written: backend descriptions, configs, errors, replies.

:func:`redact` is the one function for it. It masks the userinfo of every URL
(``http://user:pass@host`` becomes ``http://***@host``) and every given secret value, in a
string or anywhere in a JSON-like nesting of dicts, lists and tuples (keys included), in time
linear in the text.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["MASK", "map_strings", "redact", "url_secrets"]

MASK = "***"
# A scheme is tried only where a run of scheme characters starts (the lookbehind), so each run is
# read a bounded number of times: linear time. Without it, one long word was quadratic. The
# userinfo runs to the authority's last "@", as URL parsers (urllib, httpx) read a password
# holding an unescaped one; it stops at a "/", so no two userinfo runs overlap (each follows a
# "://").
_USERINFO = re.compile(r"(?<![A-Za-z0-9+.\-])([0-9+.\-]*[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#]+@")


def map_strings(value: Any, fn: Callable[[str], str]) -> Any:
    """A copy of a JSON-like value with ``fn`` applied to every string, dict keys included."""
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {map_strings(k, fn): map_strings(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(map_strings(v, fn) for v in value)
    return value


def redact(value: Any, secrets: Iterable[str | None] = ()) -> Any:
    """A copy of ``value`` with URL userinfo and each non-empty secret replaced by ``***``.

    Example:
        >>> redact({"url": "http://me:pw@host/v1", "note": "key sk-1 echoed"}, ["sk-1"])
        {'url': 'http://***@host/v1', 'note': 'key *** echoed'}
    """
    ordered = sorted({s for s in secrets if s}, key=len, reverse=True)

    def mask(text: str) -> str:
        if "://" in text:
            text = _USERINFO.sub(rf"\1{MASK}@", text)
        for secret in ordered:
            text = text.replace(secret, MASK)
        return text

    return map_strings(value, mask)


def url_secrets(url: str) -> list[str]:
    """The secrets a URL's userinfo carries: the password as written and decoded (without one,
    the user name, which is then the key: ``https://KEY@host``), and the HTTP Basic token made
    of them (what a server reflecting the ``Authorization`` header shows)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    if parts.username is None and parts.password is None:
        return []
    user, password = unquote(parts.username or ""), unquote(parts.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    key = [parts.password or "", password] if password else [parts.username or "", user]
    return [s for s in {*key, token} if s]
