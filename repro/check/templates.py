"""`repro check`'s chat-template rules (bundle format 5): the template the engine really used is
the one the matrix pins or the GGUF embeds, and no protocol is scored that it cannot carry.

- `chat-template-facts` (run): every recorded TemplateFacts re-derives from its own text (sha256,
  tools, tool calls, end-of-turn token); a pinned template hashes to the embedded matrix's pin;
  when this machine's model store holds the GGUF, the template and end-of-generation tokens are
  read from it again (otherwise they are taken on the record's word: the GGUF is pinned by
  sha256, so anyone holding it can repeat the comparison).
- `chat-template` (ran cell): the engine's reported template (sha256 from `/props`) is the
  recorded one, so a built-in fallback is never VALID; the preflight, recomputed from the facts
  and the engine's reported capabilities, lets the cell's protocol through.
- `exclusion-evidenced` accepts a configuration exclusion made at boot when the engine's own
  reported capabilities really block the protocol.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from repro.core.errors import BadInput
from repro.spec.findings import TemplateFacts
from repro.spec.matrix import ModelSpec
from repro.store.chat_template import (
    CONFIGURATION,
    engine_template_problem,
    protocol_blocker,
    recheck_facts,
    server_blocker,
    template_facts,
)

if TYPE_CHECKING:
    from repro.bundle.evidence import CellEvidence, RunEvidence


def stored_gguf_problems(model: ModelSpec, facts: TemplateFacts) -> list[str]:
    """Compare the facts with the GGUF in this machine's store, when it is there."""
    from repro.store.models import is_stored, stored_path

    if not is_stored(model):
        return []
    try:
        again = (
            template_facts(model, stored_path(model.sha256)) if facts.source == "gguf" or model.chat_template else None
        )
    except BadInput as error:
        return [f"model {model.id}: {error}"]
    if again is None:
        return [f"model {model.id}: the record says its template came from {facts.source}, but the matrix pins none"]
    problems = []
    if again.sha256 != facts.sha256:
        problems.append(
            f"model {model.id}: the recorded template ({facts.sha256[:12]}...) is not the one its {again.source} "
            f"gives ({again.sha256[:12]}...)"
        )
    if again.eog_tokens != facts.eog_tokens:
        problems.append(
            f"model {model.id}: the recorded end-of-generation tokens are not the GGUF's "
            f"({', '.join(again.eog_tokens)})"
        )
    return problems


def facts_problems(model: ModelSpec, facts: TemplateFacts) -> list[str]:
    problems = [f"model {model.id}: {problem}" for problem in recheck_facts(facts)]
    pin = model.chat_template
    if facts.source == "pinned" and (pin is None or pin.sha256 != facts.sha256):
        problems.append(
            f"model {model.id}: the recorded template is said to be pinned, but the matrix pins "
            f"{pin.sha256[:12] + '...' if pin else 'none'}"
        )
    if facts.source == "gguf" and pin is not None:
        problems.append(f"model {model.id}: the matrix pins a chat template, but the record says the GGUF's was used")
    return problems + stored_gguf_problems(model, facts)


def rule_template_facts(ev: RunEvidence) -> list[str]:
    plan = ev.plan
    if plan is None or plan.error:
        return []  # plan-recomputed names it
    models = {model.id: model for model in plan.models}
    problems = []
    for model_id, facts in ev.run.chat_templates.items():
        model = models.get(model_id)
        if model is None:
            problems.append(f"a chat template is recorded for model {model_id}, which the matrix does not name")
            continue
        problems += facts_problems(model, facts)
    return problems


def rule_chat_template(ev: CellEvidence) -> list[str]:
    cell = ev.record.cell
    if not cell.engine.facts.template_from_gguf:
        return []  # Ollama's explicit Go template is checked by the plan's preflight
    facts = ev.run.chat_templates.get(cell.model.id)
    if facts is None:
        return [f"no chat template recorded for model {cell.model.id}"]
    reported = ev.record.engine_settings.reported
    wrong = engine_template_problem(facts, reported.get("chat_template_sha256"))
    if wrong:
        return [wrong.removeprefix(CONFIGURATION)]
    blocker = protocol_blocker(facts, cell.protocol) or server_blocker(
        reported.get("chat_template_caps"), cell.protocol
    )
    return (
        [f"scored under {cell.protocol}, which the engine could not carry: {blocker.removeprefix(CONFIGURATION)}"]
        if blocker
        else []
    )


def boot_exclusion_evidenced(ev: CellEvidence) -> bool:
    """A configuration exclusion made at boot, borne out by the engine's reported capabilities."""
    record = ev.record
    reason = record.reason or ""
    if not reason.startswith(CONFIGURATION):
        return False
    return server_blocker(record.engine_settings.reported.get("chat_template_caps"), record.cell.protocol) is not None
