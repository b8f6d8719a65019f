"""The Search domain: ``domain.py`` (how its actions are read and its episodes end), ``prompt.txt``
(the world model's built-in system prompt) and ``scenarios.yaml`` (its hand-written scenarios),
``worlds.py`` generates search worlds from a seed."""
