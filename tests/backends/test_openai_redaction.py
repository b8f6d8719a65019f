"""Redaction masks a URL's whole userinfo as URL parsers read it, and nothing but it: a password
holding an unescaped ``@`` (which httpx sends as part of the password) leaked its tail into every
run record's backend description, and digits right before a scheme were dropped."""

from __future__ import annotations

import re
import urllib.parse

import numpy as np

from agentworld_envs.backends.openai_compat import OpenAIBackend
from agentworld_envs.backends.redaction import redact

_PARSED_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#]+@")
"""Userinfo up to the authority's last "@", as urllib and httpx read it (slow, for reference)."""


def test_a_password_holding_an_at_sign_is_masked_whole() -> None:
    url = "http://alice:hunter2@prod@127.0.0.1:9/v1"
    assert urllib.parse.urlsplit(url).password == "hunter2@prod"
    described = OpenAIBackend("m", url, api_key_env=None).describe()["base_urls"]
    assert described == ["http://***@127.0.0.1:9/v1"]
    assert redact(f"POST {url}/chat") == "POST http://***@127.0.0.1:9/v1/chat"


def test_the_characters_before_a_scheme_are_kept() -> None:
    assert redact("curl 1http://u:pw@h/v1 and 2x+.ftp://u:p@h") == (
        "curl 1http://***@h/v1 and 2x+.ftp://***@h")


def test_redact_masks_what_a_url_parser_calls_userinfo_on_random_text() -> None:
    rng = np.random.default_rng(31)
    alphabet = list("ab1+.-:/@ ?#")
    for _ in range(3000):
        text = "".join(rng.choice(alphabet, size=int(rng.integers(0, 24))))
        assert redact(text) == _PARSED_USERINFO.sub(r"\1***@", text), text
