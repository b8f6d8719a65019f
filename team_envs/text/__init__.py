"""Text teams for LLM agents: generated reasoning tasks and AgentFloor tool-use teams."""

from team_envs.text.base import (
    ROLE_PROMPTS,
    Problem,
    ReasoningEpisode,
    ReasoningTask,
    TextEpisode,
    TextTeamTask,
    default_roles,
    final_answer,
)

__all__ = ["ROLE_PROMPTS", "Problem", "ReasoningEpisode", "ReasoningTask", "TextEpisode",
           "TextTeamTask", "default_roles", "final_answer"]
