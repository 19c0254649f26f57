"""Engine clients: one chat request over HTTP, the reply read back, engine failures typed.

- ``openai_compat``: ``OpenAIClient`` (llama.cpp's server, any OpenAI-compatible endpoint),
  ``ChatReply``, ``ToolCall``, ``HttpClient``.
- ``ollama``: ``OllamaClient``, Ollama's native chat API.
- ``errors``: ``EngineError`` and its kinds, each naming the failure type it stands for.
"""

__all__ = ["errors", "ollama", "openai_compat"]
