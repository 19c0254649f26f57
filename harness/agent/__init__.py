"""The agent: the policy interface, the prompts, the run loop and the context compaction.

- ``policy``: ``Policy``, ``Turn``, ``Step``, ``PolicyReply``, ``ScriptedPolicy``.
- ``prompts``: the system prompt and the observation texts every protocol shares.
- ``loop``: ``run_agent``, one scenario's turns until finish, a stop or the step limit.
- ``compact``: the history kept when the context runs short.
"""

__all__ = ["compact", "loop", "policy", "prompts"]
