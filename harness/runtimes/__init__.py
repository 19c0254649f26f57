"""Agent runtimes: OpenClaw, Pi and Hermes producing each assistant turn of our loop (LAB's "react"
mode), or Pi running a scenario with its own tool calling (LAB's "native" mode), through a recording
relay to the engine (docs/runtimes.md).

- ``base``: ``RuntimeAdapter``, the interface of one runtime, and the runtime failures;
- ``registry``: runtime kind -> its adapter class, lazy (``adapter_named``): the harness's half of a
  kind whose row is repro.spec.runtimes;
- ``openclaw``, ``pi``, ``hermes``: one adapter class per runtime;
- ``client``: ``RuntimeClient``, the chat client whose every turn a runtime produces;
- ``native``: ``NativeRuntimeClient``, native mode: the runtime's own run, its calls executed by the
  harness through a tool desk;
- ``relay``: the recording relay between the runtime and the engine;
- ``wire``: reading a recorded exchange (the client's and repro's check's one reader).
"""

__all__ = ["base", "client", "native", "registry", "relay", "wire"]
