"""CONFETTI's own statistics of a file (pure): for whole conversations (a `kind: conversation`
build's drafts, templates or validated file) and for turn-level rows (an exported response-quality
set, or CONFETTI's published dialog-act file read with `--from confetti`).

- conversation types: dialogs per type, with CONFETTI's README names and its published counts
  (the README table "COMPLEXITY | # DIALOGS"); conversations only, since turn-level rows do not
  carry their dialog's type in the published files;
- dialog acts: agent turns carrying each act (a turn may carry several);
- chain lengths: calls per calling agent turn in CONFETTI's bins 1 / 2 / 3 / 4+ (the published
  set: 220 / 46 / 25 / 22 over 313 calling turns).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

from fcbench.conversation import (CHAIN_BINS, CONFETTI_TYPES, DIALOG_ACTS, META, chain_bin, conversation_stats,
                                  is_conversation)
from fcbench.sample import Sample


def confetti_statistics(items: Iterable[Any]) -> dict[str, Any] | None:
    """CONFETTI's figures of the samples, or None when they are neither conversations nor
    dialog-act rows (a single-query benchmark has nothing of CONFETTI's to show)."""
    conversations: list[Sample] = []
    rows: list[Sample] = []
    for item in items:
        if not isinstance(item, Sample):
            continue
        if is_conversation(item):
            conversations.append(item)
        elif item.dialog_acts is not None:
            rows.append(item)
    if conversations:
        stats = conversation_stats(conversations)
        return {"unit": "conversations", "conversations": stats["conversations"], "user_turns": stats["user_turns"],
                "agent_turns": stats["agent_turns"], "avg_turns": stats["avg_turns"],
                "calls": stats["calls"], "dialog_acts": {act: stats["dialog_acts"].get(act, 0) for act in DIALOG_ACTS},
                "chain_lengths": stats["chain_lengths"], "types": types_table(stats["complexities"])}
    if rows:
        acts = Counter(act for row in rows for act in row.dialog_acts or [])
        chains = Counter(chain_bin(len(row.all_calls())) for row in rows if row.all_calls())
        dialogs = {_dialog_of(row) for row in rows}
        return {"unit": "agent turns", "conversations": len(dialogs), "agent_turns": len(rows),
                "calls": sum(len(row.all_calls()) for row in rows),
                "dialog_acts": {act: acts[act] for act in DIALOG_ACTS},
                "chain_lengths": {name: chains[name] for name in CHAIN_BINS}}
    return None


def _dialog_of(row: Sample) -> str:
    """The conversation a turn-level row belongs to: ours name it, CONFETTI's ids are <uuid>_<k>."""
    ours = row.meta.get(META, {}).get("conversation_id") if isinstance(row.meta.get(META), dict) else None
    if ours:
        return str(ours)
    confetti = row.meta.get("confetti") if isinstance(row.meta.get("confetti"), dict) else {}
    dialog = str(confetti.get("dialog_id") or row.id)
    return dialog.rsplit("_", 1)[0]


def types_table(counts: dict[str, int]) -> list[dict[str, Any]]:
    """One row per CONFETTI type in its README's order (then any other tagged type)."""
    rows = [{"type": name, "confetti_name": info.confetti_name, "dialogs": counts.get(name, 0),
             "confetti_dialogs": info.published_dialogs} for name, info in CONFETTI_TYPES.items()]
    rows += [{"type": name, "confetti_name": "", "dialogs": count, "confetti_dialogs": None}
             for name, count in sorted(counts.items()) if name not in CONFETTI_TYPES]
    return rows
