"""Drafted (prompt-lookup) greedy decoding for the in-process backend: several tokens per
forward pass, the tokens greedy decoding gives.

A world model mostly copies: an observation repeats record fields, ids and tool names that
stand in its prompt. On a CPU a decode step costs about what reading all the weights costs,
whether it scores one token per row or several. So each step every running row feeds its next
token followed by a draft: what followed a match of the row's last tokens in a hint text (for
example the real counterpart's observation), in its own prompt and answer so far, or in the
decoder's last answers (an envelope's boilerplate repeats from answer to answer). Of the
occurrences of the row's longest matching tail (up to ``ngram`` tokens) the one whose match
runs furthest back wins. A draft holds up to ``draft_tokens`` tokens, or ``pass_tokens``
shared among the rows when fewer rows run: a pass of one or two rows reads all the weights
whatever its width, so a wider one costs little more. Past a token the row wrote in place of
the hint's, the hint goes on; right after a row's draft missed its first token, a weak match
drafts only a couple of tokens. One batched forward pass,
on the joined cache of :class:`~agentworld_envs.backends.ragged.RaggedDecoder`, scores every
position; each row keeps the longest prefix of its draft that equals the model's own greedy
choices there, plus the model's choice after it, so rows advance by different amounts. The
rejected drafts' cache columns are masked out (and cropped where no row kept them).

Every token is the argmax of the model's scores after exactly the tokens greedy decoding would
have fed (a draft token is kept only where it is that argmax), so the answer is the greedy
answer. The scores themselves come from forward passes of other shapes (several positions at
once), so they can differ from one-token decoding in the last bits of float precision; only a
near-tie between the two best tokens (a gap within that rounding) could then pick another
token, as it already can between a batch and a single prompt.
"""

from __future__ import annotations

import bisect
import copy
import json
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_envs.backends.ragged import RaggedDecoder

__all__ = ["DRAFTS", "DraftCorpus", "DraftStats", "DraftedDecoder", "PromptLookup",
           "draft_length", "read_corpus"]

DRAFTS = ("prompt", "none")
"""The values of the ``hf`` backend's ``draft``: prompt-lookup drafts for greedy requests, or
none (one token per forward pass)."""
DRAFT_TOKENS = 8
"""Most drafted tokens per row and step (when more rows run than share :data:`PASS_TOKENS`)."""
PASS_TOKENS = 24
"""Drafted tokens a step may share among its rows: one row gets 24, two 12 each, three or more
:data:`DRAFT_TOKENS` each. Measured on the embedded model (2 cores): a one-row pass of 25
positions cost 2.2x one of 1 and 1.3x one of 9; a 16-row pass of 9 positions 2.6x one of 1."""
NGRAM = 3
"""Longest tail of a row's tokens looked up to find a draft."""
REACH = 32
"""Furthest back a match is followed to compare the occurrences of a tail."""
CANDIDATES = 32
"""Latest occurrences of a tail compared in each source (besides where copying went on)."""
WEAK_REACH = 3
"""A match that runs back fewer tokens than this is weak."""
AFTER_A_MISS = 2
"""Most drafted tokens on a weak match right after the row's last draft missed its first
token: the row is writing text no source holds, where a wide pass costs more than it keeps
(on the embedded model, an estimated 15% of Floor's time alone, nothing on MCP's)."""
RECENT = 16
"""Answers a :class:`DraftedDecoder` keeps to draft from."""
CORPUS_NGRAM = 6
"""Tail of a row's tokens looked up in a :class:`DraftCorpus`: so many answers share short
runs of JSON that only a longer tail says which one the row is writing."""


def draft_length(rows: int, draft_tokens: int = DRAFT_TOKENS,
                 pass_tokens: int = PASS_TOKENS) -> int:
    """Most drafted tokens per row in a step where ``rows`` rows run.

    Example:
        >>> [draft_length(rows) for rows in (1, 2, 3, 16)]
        [24, 12, 8, 8]
    """
    return max(draft_tokens, pass_tokens // rows)


class PromptLookup:
    """Drafts for one row: what followed a match of its tail.

    Matches are looked up in ``hint`` (tokens the answer is likely to copy), in the row's own
    tokens (its prompt, then its answer as it grows) and in ``recent`` (earlier answers). The
    longest tail (up to ``ngram`` tokens) that occurs in any is taken; of its occurrences (in
    each source, where copying went on, the first after that source's last match, else the
    latest, and the :data:`CANDIDATES` latest), the one preceded by the longest run of the
    row's tokens (up to :data:`REACH`) wins, then the hint over the row over recent answers,
    then where copying went on. Where that match is weak and the row, since a draft from the
    hint, followed some of it and then wrote one token of its own in place of the hint's (an
    id's other digit), the hint goes on past that token instead. Right after a draft that
    missed its first token, a weak match drafts at most :data:`AFTER_A_MISS` tokens. A new
    token costs ``ngram`` dictionary writes.

    Example:
        >>> lookup = PromptLookup([5, 6, 7, 8, 5, 6])
        >>> lookup.propose(3)
        [7, 8, 5]
    """

    def __init__(self, tokens: Sequence[int], hint: Sequence[int] = (), ngram: int = NGRAM,
                 recent: Sequence[int] | _Source = (), corpus: DraftCorpus | None = None
                 ) -> None:
        self._ngram = ngram
        self._hint, self._own = _Source(ngram), _Source(ngram)
        self._hint.extend(hint)
        self._own.extend(tokens)
        if isinstance(recent, _Source):  # indexed once for every row of a batch
            self._recent = recent.view()
        else:
            self._recent = _Source(ngram)
            self._recent.extend(recent)
        self._corpus = corpus.view() if corpus is not None else None
        self._drafted: int | None = None  # the first token of the draft not yet followed
        self.missed = False
        """Whether the row's last draft missed its first token."""
        self._from_hint: tuple[int, int, int] | None = None
        """The last draft's start in the hint and reach, and the row's length then, when it
        came from the hint."""

    @property
    def tokens(self) -> list[int]:
        """The row's prompt and answer so far."""
        return self._own.tokens

    def extend(self, tokens: Sequence[int]) -> None:
        """Add tokens to the row's sequence."""
        if tokens and self._drafted is not None:
            self.missed, self._drafted = tokens[0] != self._drafted, None
        self._own.extend(tokens)

    def propose(self, most: int) -> list[int]:
        """Up to ``most`` tokens that followed the best earlier occurrence of the sequence's
        longest matching tail; empty when even its last token occurs nowhere before."""
        return self.match(most)[0]

    def match(self, most: int) -> tuple[list[int], int]:
        """:meth:`propose`'s draft and how many tokens its match ran back (0: no draft)."""
        tokens = self._own.tokens
        if most <= 0:
            return [], 0
        found = self._longest_match(tokens)
        if found is None or found[0] < WEAK_REACH:
            found = self._past_a_substitution() or found
        if self._corpus is not None and (found is None or found[0] < self._corpus.shortest):
            found = self._corpus_match(tokens) or found
        if found is None:
            return [], 0
        reach, source, start = found
        source.cursor = start
        if self.missed and reach < WEAK_REACH:
            most = min(most, AFTER_A_MISS)
        draft = source.tokens[start : start + most]
        self._drafted = draft[0] if draft else None
        self._from_hint = ((start, reach, len(tokens)) if draft and source is self._hint
                           else None)
        return draft, reach

    def _longest_match(self, tokens: list[int]) -> tuple[int, _Source, int] | None:
        """The reach, source and start of the best occurrence of the longest matching tail."""
        for n in range(min(self._ngram, len(tokens)), 0, -1):
            tail = tuple(tokens[-n:])
            best: tuple[tuple[int, int, bool], _Source, int] | None = None
            for rank, source in enumerate((self._hint, self._own, self._recent)):
                for start, going_on in source.occurrences(tail):
                    key = (source.reach(start, tokens), -rank, going_on)
                    if best is None or key > best[0]:
                        best = (key, source, start)
            if best is not None:
                return best[0][0], best[1], best[2]
        return None

    def _corpus_match(self, tokens: list[int]) -> tuple[int, _Source, int] | None:
        """The reach, source and start of the corpus's best occurrence of the row's tail (the
        row has a corpus)."""
        corpus = self._corpus
        if len(tokens) < corpus.shortest:
            return None
        best = max(((corpus.reach(start, tokens), going_on, start)
                    for start, going_on in corpus.occurrences(tuple(tokens[-corpus.shortest:]))),
                   default=None)
        return None if best is None else (best[0], corpus, best[2])

    def _past_a_substitution(self) -> tuple[int, _Source, int] | None:
        """Where the hint goes on if the row, since the last draft (from the hint), followed
        some of it and then wrote one token of its own in place of the hint's (another digit
        of an id, say): the draft's reach carries over, counting the followed tokens."""
        if self._from_hint is None:
            return None
        start, reach, length = self._from_hint
        hint, written = self._hint.tokens, self._own.tokens[length:]
        at = start + len(written)
        if (len(written) < 2 or at >= len(hint) or hint[at - 1] == written[-1]
                or hint[start : at - 1] != written[:-1]):
            return None
        return min(REACH, reach + len(written) - 1), self._hint, at


class _Source:
    """Tokens indexed by the n-grams (``shortest`` to ``ngram`` long) that precede each
    position."""

    def __init__(self, ngram: int, shortest: int = 1) -> None:
        self.tokens: list[int] = []
        self._ngram = ngram
        self.shortest = shortest
        self._starts: dict[tuple[int, ...], list[int]] = {}
        self.cursor = 0
        """Where the last draft taken from this source started."""

    def extend(self, tokens: Sequence[int]) -> None:
        for token in tokens:
            end = len(self.tokens)
            for n in range(self.shortest, min(self._ngram, end) + 1):
                self._starts.setdefault(tuple(self.tokens[end - n : end]), []).append(end)
            self.tokens.append(token)

    def occurrences(self, tail: tuple[int, ...]) -> list[tuple[int, bool]]:
        """Where tokens followed ``tail``: where copying went on (the first at or after the
        last one taken, else the latest; flagged True) and the :data:`CANDIDATES` latest."""
        starts = self._starts.get(tail)
        if not starts:
            return []
        at = bisect.bisect_left(starts, self.cursor)
        going_on = starts[at] if at < len(starts) else starts[-1]
        return [(going_on, True), *((start, False) for start in starts[-CANDIDATES:]
                                    if start != going_on)]

    def reach(self, start: int, tokens: Sequence[int]) -> int:
        """How many of ``tokens``' last tokens stand right before ``start`` (up to
        :data:`REACH`)."""
        reach, most = 0, min(REACH, start, len(tokens))
        while reach < most and self.tokens[start - 1 - reach] == tokens[-1 - reach]:
            reach += 1
        return reach

    def view(self) -> _Source:
        """These tokens and their index, shared, with a cursor of its own (for one row)."""
        view = copy.copy(self)
        view.cursor = 0
        return view


class DraftCorpus(_Source):
    """Answers a model was trained to write, each followed by an end token (when the model
    has one), indexed by their :data:`CORPUS_NGRAM`-token windows, for every row to draft
    from.

    Example:
        >>> corpus = DraftCorpus([[1, 2, 3, 4, 5, 6, 7, 8]], end=0)
        >>> PromptLookup([9, 1, 2, 3, 4, 5, 6], corpus=corpus).propose(3)
        [7, 8, 0]
    """

    def __init__(self, answers: Sequence[Sequence[int]], end: int | None,
                 ngram: int = CORPUS_NGRAM) -> None:
        super().__init__(ngram, shortest=ngram)
        for answer in answers:
            self.extend([*answer] if end is None else [*answer, end])


def read_corpus(path: str | Path) -> list[str]:
    """The answers of a draft corpus file: JSON lines, each a string.

    Raises:
        ValueError: naming the file and line of one that is not.
    """
    answers = []
    with Path(path).expanduser().open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                answer = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(answer, str):
                raise ValueError(f"{path}:{number}: an answer must be a JSON string, not "
                                 f"{type(answer).__name__}")
            answers.append(answer)
    return answers


@dataclass(slots=True)
class DraftStats:
    """How one row was decoded: forward passes after the prefill, drafted tokens fed, drafted
    tokens kept, and prompt tokens taken from the prefix cache."""

    forwards: int = 0
    proposed: int = 0
    accepted: int = 0
    reused: int = 0

    def to_dict(self) -> dict[str, int]:
        """JSON-ready form."""
        return {"forwards": self.forwards, "proposed": self.proposed, "accepted": self.accepted,
                "reused": self.reused}


class DraftedDecoder:
    """Greedy decoding of token-id prompts in one ragged batch, with prompt-lookup drafts
    verified in one forward pass per step (see the module docstring). It keeps its last
    ``recent`` answers to draft from, and drafts from ``corpus`` where nothing else matches
    well."""

    def __init__(self, torch: Any, ragged: RaggedDecoder, pad_id: int,
                 draft_tokens: int = DRAFT_TOKENS, ngram: int = NGRAM, recent: int = RECENT,
                 pass_tokens: int = PASS_TOKENS, corpus: DraftCorpus | None = None) -> None:
        self._corpus = corpus
        self._torch = torch
        self._ragged = ragged
        self._pad_id = pad_id
        self._draft_tokens = draft_tokens
        self._pass_tokens = pass_tokens
        self._ngram = ngram
        self._recent: deque[list[int]] = deque(maxlen=recent)

    def decode(self, prompts: Sequence[list[int]], max_new_tokens: int, eos_ids: set[int],
               hints: Sequence[Sequence[int]] | None = None,
               stopped: Callable[[list[int], int], bool] | None = None,
               interrupt: Callable[[], None] | None = None
               ) -> tuple[list[list[int]], list[DraftStats]]:
        """The greedy new tokens of each prompt, up to and including its first end token, and
        how each row was decoded. ``hints`` (one per prompt) only change the speed. A row also
        stops once ``stopped(new_tokens, fresh)`` (``fresh``: those of its last step) says its
        stop string is complete; its tokens may then run a little past it (an accepted
        draft). ``interrupt`` goes to the prefill
        (:meth:`~agentworld_envs.backends.ragged.RaggedDecoder.prefill`)."""
        hints = hints or [()] * len(prompts)
        # a copy: a call that outlived the simulator's timeout may still be adding to it
        recent = _Source(self._ngram)
        recent.extend([token for answer in list(self._recent) for token in answer])
        lookups = [PromptLookup(p, h, self._ngram, recent, self._corpus)
                   for p, h in zip(prompts, hints, strict=True)]
        with self._torch.inference_mode():
            cache, mask, positions, scores, reused = self._ragged.prefill(prompts, interrupt)
            new, stats = self._loop(lookups, cache, mask, positions,
                                    scores.float().argmax(dim=-1).tolist(), max_new_tokens,
                                    eos_ids, stopped)
        for row, tokens in zip(stats, reused, strict=True):
            row.reused = tokens
        self._recent.extend(new)
        return new, stats

    def _loop(self, lookups: list[PromptLookup], cache: Any, mask: Any, positions: Any,
              nexts: list[int | None], max_new_tokens: int, eos_ids: set[int],
              stopped: Callable[[list[int], int], bool] | None
              ) -> tuple[list[list[int]], list[DraftStats]]:
        torch = self._torch
        rows = list(range(len(lookups)))
        new: list[list[int]] = [[] for _ in rows]
        looked = [0] * len(rows)  # each row's tokens when its stop was last looked for
        stats = [DraftStats() for _ in rows]
        while True:
            running = []
            for slot, (row, token) in enumerate(zip(rows, nexts, strict=True)):
                if token is None:  # ended on an accepted draft token
                    continue
                new[row].append(token)
                lookups[row].extend([token])
                fresh, looked[row] = len(new[row]) - looked[row], len(new[row])
                if (token not in eos_ids and len(new[row]) < max_new_tokens
                        and not (stopped and stopped(new[row], fresh))):
                    running.append(slot)
            if not running:
                return new, stats
            most = draft_length(len(running), self._draft_tokens, self._pass_tokens)
            drafts = [lookups[rows[slot]].propose(  # the model's own token follows a draft
                min(most, max_new_tokens - len(new[rows[slot]]) - 1)) for slot in running]
            if len(running) < len(rows):
                keep = torch.tensor(running, device=mask.device)
                cache.batch_select_indices(keep)
                mask, positions = mask[keep], positions[keep]
                rows = [rows[slot] for slot in running]
                nexts = [nexts[slot] for slot in running]
            width = 1 + max(len(d) for d in drafts)
            tokens = torch.full((len(rows), width), self._pad_id, dtype=torch.long,
                                device=mask.device)
            block = mask.new_zeros((len(rows), width))
            for slot, (token, draft) in enumerate(zip(nexts, drafts, strict=True)):
                tokens[slot, : 1 + len(draft)] = torch.tensor([token, *draft])
                block[slot, : 1 + len(draft)] = 1
            mask = torch.cat([mask, block], dim=1)
            offsets = torch.arange(width, device=mask.device)
            logits = self._ragged.forward(tokens, mask, positions[:, None] + offsets, cache)
            greedy = logits.float().argmax(dim=-1).tolist()
            kept = []
            for slot, (row, draft) in enumerate(zip(rows, drafts, strict=True)):
                accepted = 0
                while accepted < len(draft) and draft[accepted] == greedy[slot][accepted]:
                    accepted += 1
                taken = draft[:accepted]
                ends = [j for j, token in enumerate(taken) if token in eos_ids]
                if ends:
                    taken = taken[: ends[0] + 1]
                new[row].extend(taken)
                lookups[row].extend(taken)
                nexts[slot] = None if ends else greedy[slot][accepted]
                stats[row].forwards += 1
                stats[row].proposed += len(draft)
                stats[row].accepted += len(taken)
                mask[slot, mask.shape[1] - width + 1 + accepted :] = 0
                kept.append(1 + accepted)
            spare = width - max(kept)
            if spare:
                cache.crop(-spare)
                mask = mask[:, :-spare]
            positions = positions + torch.tensor(kept, device=positions.device)
