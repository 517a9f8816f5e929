"""A replay LLM for memory formation: answers with what LoCoMo's own extraction LLM produced.

LoCoMo ships, for every session, the facts an LLM extracted (``observation``: per speaker, each
fact with the dialog turn it came from) and a summary (``session_summary``). This LLM reads our
real prompts, recognises the session from the turns it is shown, and answers in our JSON format:

- the extraction prompt: that session's observations, each fact's source given as the prompt's
  label of its dialog turn (facts whose turn is not in the prompt keep no source);
- the summary prompt: the session's summary;
- the consolidation prompt: LoCoMo recorded no decisions, so a fixed rule stands in: SKIP when the
  new fact's words equal a candidate's, otherwise ADD (``decisions`` counts what it answered).

So the whole write path runs on real extraction output, with no model and no network.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from memory_retrievers.formation.prompts import EXTRACTION_MARKER, SUMMARY_MARKER
from memory_retrievers.text.words import meaning_words

__all__ = ["LoCoMoReplayLLM", "dia_ids"]

_LINE = re.compile(r"^\[(\d+)\] (.*)$")


def dia_ids(raw: object) -> list[str]:
    """The well-formed dialog ids in an observation's source (a string, a list, or malformed)."""
    items = raw if isinstance(raw, list) else [raw]
    return [p for item in items for p in re.split(r"[;,\s]+", str(item)) if re.fullmatch(r"D\d+:\d+", p)]


class LoCoMoReplayLLM:
    """Replays LoCoMo's extraction output for our prompts (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self._sessions: dict[tuple[str, str], dict[str, object]] = {}
        self._where: dict[str, list[tuple[str, str, str]]] = {}
        self.calls: Counter[str] = Counter()
        self.decisions: Counter[str] = Counter()
        for conv in json.loads(path.read_text()):
            c, sid = conv["conversation"], conv["sample_id"]
            for key in c:
                if not re.fullmatch(r"session_\d+", key):
                    continue
                obs = conv.get("observation", {}).get(f"{key}_observation", {})
                summary = conv.get("session_summary", {}).get(f"{key}_summary", "")
                self._sessions[(sid, key)] = {"observation": obs, "summary": summary}
                for t in c[key]:
                    self._where.setdefault(self._key(t["text"]), []).append((sid, key, t["dia_id"]))

    @staticmethod
    def _key(text: str) -> str:
        # The stored turn is "Speaker: text [shares a photo: ...]"; match on the text itself.
        text = re.sub(r" \[shares a photo: .*\]$", "", text)
        text = re.sub(r"^[^:]{1,40}: ", "", text, count=1)
        return " ".join(text.split())

    def _session(self, prompt: str) -> tuple[tuple[str, str] | None, dict[str, int]]:
        votes: Counter[tuple[str, str]] = Counter()
        labels: dict[tuple[str, str, str], int] = {}
        for line in prompt.splitlines():
            found = _LINE.match(line)
            if not found:
                continue
            for sid, session, dia in self._where.get(self._key(found.group(2)), []):
                votes[(sid, session)] += 1
                labels[(sid, session, dia)] = int(found.group(1))
        if not votes:
            return None, {}
        best = votes.most_common(1)[0][0]
        return best, {dia: n for (sid, s, dia), n in labels.items() if (sid, s) == best}

    def complete(self, prompt: str) -> str:
        """Answer one of the formation prompts."""
        if prompt.startswith(EXTRACTION_MARKER):
            self.calls["extraction"] += 1
            session, labels = self._session(prompt)
            if session is None:
                return '{"facts": []}'
            facts = []
            for speaker, items in dict(self._sessions[session]["observation"]).items():  # type: ignore[call-overload]
                for item in items:
                    text, source = (item[0], item[1]) if isinstance(item, list) and len(item) >= 2 else (item, "")
                    sources = [labels[d] for d in dia_ids(source) if d in labels]
                    facts.append({"text": text, "about": speaker, "sources": sources, "confidence": "explicit"})
            return json.dumps({"facts": facts})
        if prompt.startswith(SUMMARY_MARKER):
            self.calls["summary"] += 1
            session, _ = self._session(prompt)
            return str(self._sessions[session]["summary"]) if session else ""
        self.calls["consolidation"] += 1
        new = re.search(r"^NEW: (.*)$", prompt, re.MULTILINE)
        candidates = re.findall(r"^\[(\d+)\] (.*)$", prompt, re.MULTILINE)
        words = set(meaning_words(new.group(1))) if new else set()
        for n, text in candidates:
            if words and set(meaning_words(text)) == words:
                self.decisions["SKIP"] += 1
                return json.dumps({"action": "SKIP", "target": int(n)})
        self.decisions["ADD"] += 1
        return '{"action": "ADD", "target": null}'

    async def acomplete(self, prompt: str) -> str:
        """Async twin of :meth:`complete` (no I/O: answers at once)."""
        return self.complete(prompt)
