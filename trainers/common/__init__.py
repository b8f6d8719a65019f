"""Utilities shared by the team trainers: settings, rollouts, objectives, updates, logging."""
