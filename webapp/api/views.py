"""The "API tokens" page: a user names, creates (seen once, in the current workspace), lists and revokes their own
tokens."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from webapp.api import tokens
from webapp.api.models import ApiToken
from webapp.workspaces.current import current_workspace


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, label="Name", help_text="What uses it, e.g. 'deploy script'.")
    expires_in_days = forms.IntegerField(
        min_value=1, max_value=3650, required=False, label="Expires in (days)", help_text="Empty: never."
    )
    read_only = forms.BooleanField(
        required=False, label="Read only", help_text="It can read everything you can, and change nothing."
    )


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    form = ApiTokenForm()
    context: dict = {}
    if request.method == "POST":
        if request.POST.get("action") == "revoke":
            try:
                token = tokens.api_token_get(user=request.user, pk=int(request.POST.get("token", "")))
            except (ValueError, ApiToken.DoesNotExist):
                messages.error(request, "No such token.")
            else:
                tokens.api_token_revoke(token=token, actor=request.user)
                messages.success(request, f"Token {token.name!r} revoked.")
            return redirect("account_tokens")
        form = ApiTokenForm(request.POST)
        if form.is_valid():
            try:
                token, text = tokens.api_token_create(
                    user=request.user,
                    name=form.cleaned_data["name"],
                    expires_in_days=form.cleaned_data["expires_in_days"],
                    read_only=form.cleaned_data["read_only"],
                    workspace=current_workspace(request),
                )
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(field if field in form.fields else None, errors)
            else:
                # Rendered, not redirected: the token must not travel through a URL or the session.
                context.update(new_token=token, new_token_text=text)
                form = ApiTokenForm()
    context.update(form=form, tokens=tokens.api_token_list(user=request.user))
    response = render(request, "account/tokens.html", context)
    response["Cache-Control"] = "no-store"
    return response
