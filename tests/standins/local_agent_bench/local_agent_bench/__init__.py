"""A stand-in for Local Agent Bench, written by the repro project for its tests (not LAB's code)."""

VERSION = "0.0.0+repro-standin"
