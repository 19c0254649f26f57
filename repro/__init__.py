"""repro: containerized clean-room reproducibility toolkit for agent benchmarks of local LLMs."""

__version__ = "0.1.0"

__all__ = ["__version__"]
