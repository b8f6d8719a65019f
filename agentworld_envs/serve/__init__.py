"""Serve any agentworld env over OpenEnv's protocol (the ``serve`` extra).

``agentworld serve ENV_ID`` (:mod:`.cli`) runs :func:`~agentworld_envs.serve.app.build_app`:
OpenEnv's HTTP server and WebSocket protocol, whose sessions (:mod:`.session`) each play a
``gym.make`` of the id, with one world model shared by all sessions and their concurrent steps
batched into one model call (:mod:`.served_env`,
:class:`~agentworld_envs.backends.batching.BatchingBackend`).
Reach it with OpenEnv's own clients, e.g. ``GenericEnvClient(base_url=...)``.
"""
