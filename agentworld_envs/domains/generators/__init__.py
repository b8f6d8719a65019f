"""Procedural scenario generators: every scenario is fixed by one integer seed."""
