"""A Stable-Baselines3 actor-critic that scores each candidate action against the state.

The envs shuffle their candidates at every reset, so the logit of index ``k`` has to depend on
candidate in block ``k`` of ``obs["candidates"]`` (:class:`CandidateObservation`), not on
``k``: this policy encodes the state (every other part of the observation, token ids embedded by
:class:`TokenEmbeddingExtractor`) and each candidate with one shared encoder, and scores each
pair with one shared network. Permuting the candidates permutes the logits the same way.
Padding indices (0 in ``obs["candidate_mask"]``) get no probability. The value reads the state
alone::

    PPO(CandidateScoringPolicy, wrap_for_sb3(env, max_candidates=16))

Needs ``stable-baselines3`` and ``torch`` (``pip install "agentworld[rl]"``).
"""

from __future__ import annotations

import math
from typing import Any

from gymnasium import spaces
from gymnasium.error import DependencyNotInstalled

from agentworld_envs.wrappers.candidate_observation import CANDIDATES_KEY, MASK_KEY

try:
    import torch
    from stable_baselines3.common.policies import MultiInputActorCriticPolicy
    from stable_baselines3.common.preprocessing import get_flattened_obs_dim
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
    from torch import nn
except ImportError as exc:
    raise DependencyNotInstalled(
        'CandidateScoringPolicy needs stable-baselines3 and torch: pip install "agentworld[rl]"'
    ) from exc

# after the check above, so that its hint (not token_embedding's) names what was imported
from agentworld_envs.wrappers.token_embedding import TokenEmbeddingExtractor, is_token_box

__all__ = ["CandidateFeatures", "CandidateOverlapFeatures", "CandidateScoringPolicy"]

_MASKED = -1e9
"""The logit of a padding index."""
_CANDIDATE_PARTS = (CANDIDATES_KEY, MASK_KEY)


class _CandidateExtractor(BaseFeaturesExtractor):
    """The layout both extractors share: ``rows`` candidates of ``length`` token ids, and
    features ``[state (hidden_dim), rows * candidate (hidden_dim), mask (rows)]``."""

    def __init__(self, observation_space: spaces.Dict, hidden_dim: int) -> None:
        if not (isinstance(observation_space, spaces.Dict)
                and set(_CANDIDATE_PARTS) <= set(observation_space.spaces)):
            raise ValueError(f"CandidateScoringPolicy needs a Dict observation with "
                             f"{CANDIDATES_KEY!r} and {MASK_KEY!r} (wrap_for_sb3(..., "
                             f"observation='dict')), not {observation_space}")
        rows = int(observation_space[MASK_KEY].n)
        super().__init__(observation_space, hidden_dim * (rows + 1) + rows)
        self.rows, self.hidden_dim = rows, hidden_dim
        self.length = observation_space[CANDIDATES_KEY].shape[0] // rows
        self.vocab = int(observation_space[CANDIDATES_KEY].high.max()) + 1


class CandidateFeatures(_CandidateExtractor):
    """The state's vector, each candidate's vector and the padding mask, concatenated.

    Args:
        observation_space: A ``Dict`` with the entries of :class:`CandidateObservation` and
            token-id or numeric parts for the state.
        embedding_dim: Length of each token id's vector.
        hidden_dim: Length of the state's and of each candidate's vector.

    The features are ``[state (hidden_dim), rows * candidate (hidden_dim), mask (rows)]``.
    """

    def __init__(self, observation_space: spaces.Dict, embedding_dim: int = 8,
                 hidden_dim: int = 64) -> None:
        super().__init__(observation_space, hidden_dim)
        self.state = TokenEmbeddingExtractor(spaces.Dict({
            key: space for key, space in observation_space.spaces.items()
            if key not in _CANDIDATE_PARTS}), embedding_dim)
        self.state_net = nn.Sequential(nn.Linear(self.state.features_dim, hidden_dim), nn.ReLU())
        self.tokens = nn.Embedding(self.vocab, embedding_dim)
        self.candidate_net = nn.Sequential(nn.Linear(self.length * embedding_dim, hidden_dim),
                                           nn.ReLU())

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        """Encode the state and every candidate (with one shared encoder)."""
        ids = observations[CANDIDATES_KEY].long().view(-1, self.rows, self.length)
        state = self.state_net(self.state(
            {key: value for key, value in observations.items() if key not in _CANDIDATE_PARTS}))
        candidates = self.candidate_net(self.tokens(ids).flatten(2))
        return torch.cat([state, candidates.flatten(1), observations[MASK_KEY].float()], dim=1)


def ngram_codes(ids: torch.Tensor, n: int, vocab: int, padding: int) -> torch.Tensor:
    """One integer per position of ``ids`` (``[..., length]``, ids below ``vocab``, 0 =
    padding): the code of the ``n`` ids starting there, equal exactly when the ids are;
    ``padding`` where the window runs into padding or off the end."""
    length = ids.shape[-1]
    window = nn.functional.pad(ids, (0, n - 1))
    codes, whole = torch.zeros_like(ids), torch.ones_like(ids, dtype=torch.bool)
    for offset in range(n):
        part = window[..., offset:offset + length]
        codes, whole = codes * vocab + part, whole & (part != 0)
    return torch.where(whole, codes, torch.full_like(codes, padding))


def occurs_in(codes: torch.Tensor, text: torch.Tensor) -> torch.Tensor:
    """``[batch, rows, length]`` booleans: whether each code occurs in its sample's ``text``
    codes (``[batch, positions]``), by binary search in the sorted text."""
    batch, rows, length = codes.shape
    ordered = torch.sort(text, dim=1).values
    flat = codes.reshape(batch, rows * length)
    found = torch.searchsorted(ordered, flat).clamp(max=text.shape[1] - 1)
    return (torch.gather(ordered, 1, found) == flat).view(batch, rows, length)


class CandidateOverlapFeatures(_CandidateExtractor):
    """:class:`CandidateFeatures` that also see which parts of a candidate the state shows.

    Tool calls name what an observation shows (a record id, an answer's number), and a
    position-by-position embedding has to learn that match anew for every value. Here each
    candidate token carries one flag per state text (prompt, observation): whether the
    ``ngram`` tokens starting at it occur in that text. Each text is also encoded without
    positions, by a convolution over ``ngram`` tokens and a max over positions, so a value
    reads the same wherever it stands. Same layout as :class:`CandidateFeatures`.

    Args:
        observation_space: As for :class:`CandidateFeatures`; its token-id ``Box`` parts longer
            than ``ngram`` are the state's texts, the others are flattened.
        embedding_dim: Length of each token id's vector.
        hidden_dim: Length of the state's and of each candidate's vector.
        ngram: Tokens per matched window (3 matches a 3-digit count byte by byte).
        channels: Convolution channels per state text.
    """

    def __init__(self, observation_space: spaces.Dict, embedding_dim: int = 8,
                 hidden_dim: int = 64, ngram: int = 3, channels: int = 32) -> None:
        super().__init__(observation_space, hidden_dim)
        self.ngram = ngram
        if ngram < 1 or ngram * math.log2(self.vocab) >= 63:
            raise ValueError(f"ngram must be at least 1 and its codes fit 63 bits: {ngram} "
                             f"tokens of a {self.vocab}-id vocabulary do not")
        state = {k: v for k, v in observation_space.spaces.items() if k not in _CANDIDATE_PARTS}
        self.texts = [k for k, v in state.items() if is_token_box(v) and v.shape[0] > ngram]
        self.others = [k for k in state if k not in self.texts]
        self.tokens = nn.Embedding(self.vocab, embedding_dim)
        self.conv = nn.Conv1d(embedding_dim, channels, ngram)
        other_dim = sum(get_flattened_obs_dim(state[k]) for k in self.others)
        self.state_net = nn.Sequential(
            nn.Linear(channels * len(self.texts) + other_dim, hidden_dim), nn.ReLU())
        self.candidate_net = nn.Sequential(
            nn.Linear(self.length * (embedding_dim + len(self.texts)), hidden_dim), nn.ReLU())

    def forward(self, observations: dict[str, torch.Tensor]) -> torch.Tensor:
        """Encode the state and every candidate with its overlap flags."""
        ids = observations[CANDIDATES_KEY].long().view(-1, self.rows, self.length)
        codes = ngram_codes(ids, self.ngram, self.vocab, padding=-1)
        flags, pooled = [], []
        for key in self.texts:
            text = observations[key].long()
            flags.append(occurs_in(codes, ngram_codes(text, self.ngram, self.vocab, padding=-2)))
            convolved = torch.relu(self.conv(self.tokens(text).transpose(1, 2)))
            pooled.append(convolved.max(dim=2).values)
        others = [observations[k].float().flatten(1) for k in self.others]
        state = self.state_net(torch.cat(pooled + others, dim=1))
        marked = torch.cat([self.tokens(ids), *(f.unsqueeze(3).float() for f in flags)], dim=3)
        candidates = self.candidate_net(marked.flatten(2))
        return torch.cat([state, candidates.flatten(1), observations[MASK_KEY].float()], dim=1)


class _ScoringHead(nn.Module):
    """The ``mlp_extractor``: one logit per candidate, and the value's latent."""

    def __init__(self, rows: int, hidden_dim: int) -> None:
        super().__init__()
        self.rows, self.hidden_dim = rows, hidden_dim
        self.latent_dim_pi, self.latent_dim_vf = rows, hidden_dim
        self.scorer = nn.Sequential(nn.Linear(3 * hidden_dim, hidden_dim), nn.Tanh(),
                                    nn.Linear(hidden_dim, 1))
        self.critic = nn.Sequential(nn.Linear(hidden_dim, hidden_dim), nn.Tanh())

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: torch.Tensor) -> torch.Tensor:
        state = features[:, :self.hidden_dim]
        candidates = features[:, self.hidden_dim:-self.rows].view(-1, self.rows, self.hidden_dim)
        paired = state.unsqueeze(1).expand_as(candidates)
        scores = self.scorer(torch.cat([paired, candidates, paired * candidates], dim=2))
        return scores.squeeze(2).masked_fill(features[:, -self.rows:] == 0, _MASKED)

    def forward_critic(self, features: torch.Tensor) -> torch.Tensor:
        return self.critic(features[:, :self.hidden_dim])


class CandidateScoringPolicy(MultiInputActorCriticPolicy):
    """``MultiInputActorCriticPolicy`` whose logits score the observed candidates (see above).

    Takes the arguments of ``MultiInputActorCriticPolicy``; ``features_extractor_kwargs``
    holds ``embedding_dim`` and ``hidden_dim`` of :class:`CandidateFeatures`.

    Example:
        >>> import gymnasium as gym, floor_tasks
        >>> from stable_baselines3 import PPO
        >>> from agentworld_envs.wrappers import wrap_for_sb3
        >>> env = wrap_for_sb3(gym.make("AgentFloor/A2-v0"), max_candidates=4, max_length=16)
        >>> model = PPO(CandidateScoringPolicy, env, n_steps=8, batch_size=8).learn(8)
        >>> obs, info = env.reset(seed=0)
        >>> int(model.predict(obs, deterministic=True)[0]) < len(info["candidates"])
        True
    """

    def __init__(self, observation_space: spaces.Dict, action_space: spaces.Discrete,
                 *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("features_extractor_class", CandidateFeatures)
        super().__init__(observation_space, action_space, *args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = _ScoringHead(self.features_extractor.rows,
                                          self.features_extractor.hidden_dim)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # the head's scores are the logits
        last = self.mlp_extractor.scorer[-1]
        nn.init.orthogonal_(last.weight, gain=0.01)  # near-uniform first choices
        nn.init.zeros_(last.bias)
        self.optimizer = self.optimizer_class(self.parameters(), lr=lr_schedule(1),
                                              **self.optimizer_kwargs)
