"""The activity page: who did what in the current workspace, newest first, narrowed by action or user."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from webapp.activity import selectors
from webapp.workspaces.current import current_workspace

PAGE_ENTRIES = 200


@login_required
@require_GET
def activity_list(request: HttpRequest) -> HttpResponse:
    workspace = current_workspace(request)
    action = request.GET.get("action", "").strip()[:50] or None
    actor = request.GET.get("actor", "").strip()[:150] or None
    entries = selectors.activity_list(user=request.user, workspace=workspace, action=action, actor=actor)
    return render(
        request,
        "activity/activity_list.html",
        {"workspace": workspace, "entries": entries[:PAGE_ENTRIES], "action": action or "", "actor": actor or ""},
    )
