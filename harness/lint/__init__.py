"""Scenario lint: does a scenario file follow the project's rules, and can it be scored at all.

- ``scenarios``: the rules (``lint_path``, ``lint_file``, ``lint_suite``, ``unfit_to_score``).
- ``agents``: the scripted agents the lint runs a scenario with (do nothing, random, finish now).

The host may import the names below (a suite refuses a scenario unfit to score).
"""

from harness.lint.scenarios import lint_file, lint_path, lint_suite, unfit_to_score

__all__ = ["lint_file", "lint_path", "lint_suite", "unfit_to_score"]
