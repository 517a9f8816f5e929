"""Shared loading of the LoCoMo evaluation data (never copied into the repo)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

DEFAULT_LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo_dev.json"


@dataclass(frozen=True)
class Turn:
    conversation: str
    session: str
    dia_id: str
    text: str  # "Speaker: text" as in the peers' setup
    created_at: datetime


def _session_date(raw: str) -> datetime:
    # e.g. "1:56 pm on 8 May, 2023"
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def load_turns(path: Path = DEFAULT_LOCOMO) -> list[Turn]:
    """Every dialog turn of the split, in conversation order."""
    if not path.exists():
        raise SystemExit(f"LoCoMo data not found at {path}; pass --data PATH (see ../shared/data/locomo/README.md)")
    turns: list[Turn] = []
    for conv in json.loads(path.read_text()):
        c = conv["conversation"]
        sessions = sorted((k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1]))
        for s in sessions:
            date = _session_date(c[f"{s}_date_time"])
            for t in c[s]:
                text = t["text"]
                if t.get("blip_caption"):
                    text = f"{text} [shares a photo: {t['blip_caption']}]"
                turns.append(Turn(conv["sample_id"], s, t["dia_id"], f"{t['speaker']}: {text}", date))
    return turns
