"""The text of a chat message as the store keeps it and as recall searches it (no framework imported)."""

from __future__ import annotations

__all__ = ["chat_text", "clean_text", "query_text"]


def clean_text(text: str, max_chars: int | None) -> str:
    """``text`` made storable: NUL replaced by U+FFFD, lone surrogates by ``?``, cut to ``max_chars``.

    For the *searchable* text of framework objects whose exact form is kept elsewhere (in
    metadata), so cleaning loses nothing the adapter returns. ``max_chars=None`` cuts nothing: a
    chat message is stored whole, and one over ``StoreConfig.max_text_chars`` is refused by the
    store, as any memory is.
    """
    cleaned = text.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")
    return cleaned if max_chars is None else cleaned[:max_chars]


def query_text(text: str, max_chars: int) -> str:
    """A chat message as a recall query, cut to ``max_chars``.

    ``max_chars`` is a retriever's ``config.query.max_query_chars``, so an adapter never fails on a long
    message. Recall itself searches a long query by its opening and end
    (``RecallConfig.query.searched_query_chars``).
    """
    return text[:max_chars]


def chat_text(role: str, body: str, *, max_chars: int | None, kind: str | None = None) -> str:
    """What recall searches for a chat message: ``"role: body"``, cleaned and cut (``None``: whole).

    A message without text becomes ``"role: [kind message without text]"`` (``kind`` defaults to
    the role), so tool calls and images still leave a findable turn.
    """
    if not body.strip():
        body = f"[{kind or role} message without text]"
    return clean_text(f"{role}: {body}", max_chars)
