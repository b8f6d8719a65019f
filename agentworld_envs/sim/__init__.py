"""The world-model env: output parsing, scenarios, termination, rewards, the env and the
batched vector env.

Modules are imported where used; importing this package imports nothing else.
"""
