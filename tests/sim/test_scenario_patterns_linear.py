"""The built-in scenarios' action patterns are written so that Python's backtracking engine
reads an action in linear time (``grep.*ERROR`` took 7 s on a 32k-character action of repeated
``grep``s, ``rm\\s+-[a-z]*r[a-z]*f?\\s+/`` 54 s on ``rm -rrr...``): each rewrite matches
exactly what the pattern it replaced matched, on texts drawn from both patterns' pieces.
Their speed is measured in ``tests/bench/test_bench_parsing.py``."""

from __future__ import annotations

import re

import numpy as np
import pytest

from agentworld_envs.domains import DOMAINS, get_domain

REWRITTEN = {  # the pattern as first written: the reference for what the rewrite must match
    # the count, not any text, goes to answer.txt (scenarios2 review: ``grep ERROR ... >
    # answer.txt`` after ``wc -l`` of the whole log scored 1)
    "terminal-count-log-errors": [r'grep.*ERROR', r'grep[^"]*(\s-\w*c|--count)|wc\s+-l',
                                  r'([ \t]-\w*c|--count|wc[ \t]+-l|\b37\b).*answer\.txt'],
    "terminal-stop-port-8080": [r'kill[^"]*(4412|8080)|fuser[^"]*8080|pkill[^"]*http'],
    "terminal-extract-archive": [r'tar\s+-?[a-z]*x',
                                 r'tar\s[^"]*-C\s*(?!\s|(/app|\.)/?(\s|\\n|"|$))'],
    # /app and the system /tmp are forbidden too (scenarios2 review: ``rm -rf /app/*`` scored 1)
    "terminal-clean-tmp-safely": [r'rm .*(/app/)?tmp',
                                  r'rm\s+-[a-z]*r[a-z]*f?\s+/(app/?|tmp/?)?(\s|\*|\\n|"|$)'],
    "os-make-project-folder": [r'(mkdir|makedirs)\b[^;]*Projects/alpha\b'],
}
PIECES = ['grep', 'ERROR', 'error', '"', ' ', '  ', '\n', '\\n', '-c', '-vc', '-ic', '--count',
          'wc -l', 'kill', 'pkill', 'fuser', '4412', '8080', 'http', 'tar', 'tar ', '-C', '-C ',
          '/app', '/app/', '.', '/tmp', 'rm ', 'rm -', 'rf', 'r', 'f', 'R', '/', ' /', '*', 'tmp',
          'mkdir', 'makedirs', 'mkdirs', ';', 'Projects/alpha', 'Projects/alphabet', 'x', '9',
          'rm -rf', 'rm -r', 'rm  -fr', '-rF', ' / ', ' /"', ' /*', ' /\\n', 'answer.txt']


def _patterns(scenario_id: str) -> list[str]:
    """The scenario's change patterns: a verification that must follow one (``after``) came
    later and has no first form."""
    scenario = next(scenarios[scenario_id] for key in DOMAINS
                    if scenario_id in (scenarios := get_domain(key).builtin))
    return [c.value for c in scenario.reward.checks
            if c.check.endswith("action_matches") and c.after is None]


@pytest.mark.parametrize("scenario_id", sorted(REWRITTEN))
def test_each_rewrite_matches_what_its_first_form_matched(scenario_id: str) -> None:
    first = REWRITTEN[scenario_id]
    now = _patterns(scenario_id)[:len(first)]  # the checks added since come after: no first form
    assert len(now) == len(first)
    rng = np.random.default_rng(0)
    texts = ["".join(rng.choice(PIECES, size=int(rng.integers(1, 24)))) for _ in range(20000)]
    for new, old in zip(now, first, strict=True):
        new_re, old_re = re.compile(new, re.IGNORECASE), re.compile(old, re.IGNORECASE)
        hits = [bool(old_re.search(text)) for text in texts]
        assert 100 < sum(hits) < len(texts) - 100  # the draws reach both answers
        assert [bool(new_re.search(text)) for text in texts] == hits, new
