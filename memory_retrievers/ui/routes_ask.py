"""The ask page: ``GET /ns/{namespace}/ask`` (the route the lead adds to the app's routes).

It shows the form alone while ``q`` is empty, the recall explained (``_ask_result.html``) once
one is asked, or two configs side by side (``_compare.html``) when ``compare`` is set. A bad
field renders the form again with the error (status 400), naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memory_retrievers.errors import ConfigError, InvalidInputError
from memory_retrievers.ui.ask import WINDOW_NOTE, AskView, CompareView, ask_view, compare_view
from memory_retrievers.ui.ask_form import CONFIG_CHOICES, DEFAULT_CONFIG, AskForm
from memory_retrievers.ui.links import ns_url
from memory_retrievers.ui.pictures import CHANNEL_COLOURS, explanation_svg, strip_svg

__all__ = ["ROUTES", "Shown", "ask_page", "link"]

_FIELDS = ("q", "budget", "config", "compare", "overrides", "compare_overrides")


def link(request: Request, route_name: str, namespace: str, **params: str) -> str:
    """The URL of one of the app's pages for ``namespace`` (the app's :func:`~.links.ns_url`)."""
    return ns_url(request, route_name, namespace, **params)


@dataclass(frozen=True, slots=True)
class Shown:
    """An :class:`AskView` with its pictures drawn (what ``_ask_result.html`` renders)."""

    view: AskView
    pictures: dict[str, Markup]
    """Each explained memory's and loser's picture, by id."""
    strip: Markup
    """The winners-versus-losers strip chart."""
    side: str = "only"
    """Which side of a comparison (``left``/``right``), or ``only``: keeps the page's anchors unique."""


def shown(view: AskView, side: str = "only") -> Shown:
    """Draw a view's pictures (on one fused-score scale, so that bars compare across memories)."""
    everyone = (*view.explained, *view.losers)
    scale = max((m.fused_score for m in everyone), default=0.0)
    pictures = {m.id: Markup(explanation_svg(m, fused_scale=scale)) for m in everyone}
    return Shown(view, pictures, Markup(strip_svg(view.explained, view.losers)), side)


async def ask_page(request: Request) -> Response:
    """The ask page: the form, and the recall explained (or compared) once ``q`` is given."""
    namespace = str(request.path_params["namespace"])
    values = {name: request.query_params.get(name, "") for name in _FIELDS}
    ctx: dict[str, Any] = {
        "ask_url": link(request, "ask", namespace),
        "choices": CONFIG_CHOICES,
        "default_config": DEFAULT_CONFIG,
        "values": values,
        "channel_colours": CHANNEL_COLOURS,
        "window_note": WINDOW_NOTE,
        "memory_url": lambda memory_id: link(request, "memory", namespace, id=memory_id),
        "error": None,
        "shown": None,
        "compare": None,
    }
    status = 200
    try:
        form = AskForm.parse(request.query_params)
        if form.query:
            ctx.update(await _result(request.app.state.store, namespace, form))
    except (InvalidInputError, ConfigError) as exc:
        ctx["error"], status = str(exc), 400
    templates = request.app.state.templates
    response: Response = templates.TemplateResponse(request, "ask.html", ctx, status_code=status)
    return response


async def _result(store: Any, namespace: str, form: AskForm) -> dict[str, Any]:
    """The template's result variables: one side shown, or both compared."""
    if form.right is not None:
        both: CompareView = await compare_view(store, namespace, form)
        return {"compare": both, "left": shown(both.left, "left"), "right": shown(both.right, "right")}
    return {"shown": shown(await ask_view(store, namespace, form))}


ROUTES = [Route("/ns/{namespace:ns}/ask", ask_page, methods=["GET"], name="ask")]
"""The ask page's routes; the app lists them before ``/ns/{namespace:path}``, which would take them."""
