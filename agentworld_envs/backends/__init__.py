"""Model backends behind one batched interface, built from plain data by :func:`make_backend`."""

from agentworld_envs.backends.base import Backend, BackendError
from agentworld_envs.backends.redaction import redact
from agentworld_envs.backends.registry import (
    check_backend_config,
    make_backend,
    parse_backend_arg,
    register_backend,
)
from agentworld_envs.protocol.chat import ChatRequest, Completion, SamplingParams, Usage

__all__ = [
    "Backend",
    "BackendError",
    "ChatRequest",
    "Completion",
    "SamplingParams",
    "Usage",
    "check_backend_config",
    "make_backend",
    "parse_backend_arg",
    "redact",
    "register_backend",
]
