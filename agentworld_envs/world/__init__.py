"""What a simulated step is, as pure data: the scenario, the wire format sent to the world
model, reading its output, the prompt sets, the real counterpart, the rule checks and the judge.

Nothing here runs an env or calls a backend: :mod:`agentworld_envs.sim` does, with the
domains' help. Modules are imported where used; importing this package imports nothing else.
"""
