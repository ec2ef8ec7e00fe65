"""Mneia: project memory for teams of people and AI agents."""

__version__ = "0.1.0"
