"""The dedup step's live check against the stored sample (an htmx partial beside the key and event-time
fields): the share of sampled events without a usable key or event time, by the engine's rules."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from webapp.wizard.selectors import draft_get
from webapp.wizard.steps.fit import dedup_presence_from_post


@login_required
@require_POST
def dedup_presence(request: HttpRequest, draft_id: int) -> HttpResponse:
    draft = draft_get(user=request.user, pk=draft_id)
    context = dedup_presence_from_post(draft, request.POST)
    return render(request, "wizard/partials/dedup_presence.html", context)
