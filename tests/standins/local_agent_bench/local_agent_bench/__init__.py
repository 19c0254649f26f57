"""The repro project's stand-in for Local Agent Bench (not LAB's code): see ../README.md."""

VERSION = "0.0-standin"
