"""The Web domain: ``domain.py`` (how its actions are read and its episodes end), ``prompt.txt``
(the world model's built-in system prompt) and ``scenarios.yaml`` (its hand-written scenarios)."""
