"""The workspace pages: switch the current workspace (the header's menu), create one, and its members page (a
workspace admin adds a user by username or email with a role, changes a role, removes a member; everyone else
sees the list), and the workspace's settings. Refusals are the policy's (`webapp.workspaces.policy`): 404
outside, a 403 page for a role."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from webapp.core.exceptions import ApplicationError
from webapp.workspaces import invites, policy, selectors, services
from webapp.workspaces.current import current_workspace_switch
from webapp.workspaces.models import Role


class MemberAddForm(forms.Form):
    username = forms.CharField(max_length=254, label="Username or email")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)


class InviteForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices, initial=Role.VIEWER)
    email = forms.EmailField(required=False, label="For (email, optional)")


class InviteAcceptForm(forms.Form):
    username = forms.CharField(max_length=150, label="User name")
    email = forms.EmailField(required=False, label="Email")
    password = forms.CharField(widget=forms.PasswordInput, label="Password")
    password_again = forms.CharField(widget=forms.PasswordInput, label="Password, again")

    def clean(self) -> dict:
        data = super().clean() or {}
        if data.get("password") and data.get("password") != data.get("password_again"):
            self.add_error("password_again", "The two passwords differ.")
        return data


class WorkspaceForm(forms.Form):
    name = forms.CharField(max_length=100, label="Name", help_text="e.g. the team's name.")


def _errors(request: HttpRequest, exc: Exception) -> None:
    if isinstance(exc, ValidationError):
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.error(request, getattr(exc, "message", str(exc)))


@login_required
@require_POST
def workspace_switch(request: HttpRequest, pk: int) -> HttpResponse:
    workspace = selectors.workspace_get(user=request.user, pk=pk)
    current_workspace_switch(request, workspace)
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}, require_https=False):
        back = ""
    # Another workspace's object page would be a 404 now: lists are the safe place to land.
    return redirect(back if back and back.rstrip("/").count("/") <= 1 else "pipelines:list")


@login_required
@require_http_methods(["GET", "POST"])
def workspace_new(request: HttpRequest) -> HttpResponse:
    form = WorkspaceForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            workspace = services.workspace_create(user=request.user, name=form.cleaned_data["name"])
        except ValidationError as exc:
            _errors(request, exc)
        else:
            current_workspace_switch(request, workspace)
            messages.success(request, f"Workspace {workspace.name} created; you are its admin.")
            return redirect("workspaces:members", pk=workspace.pk)
    return render(request, "workspaces/workspace_new.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def workspace_members(request: HttpRequest, pk: int) -> HttpResponse:
    workspace = selectors.workspace_get(user=request.user, pk=pk)
    form, invite_form, invite_link = MemberAddForm(), InviteForm(), ""
    if request.method == "POST":
        action = request.POST.get("action")
        policy.require(request.user, "workspace.settings" if action == "settings" else "member.manage", workspace)
        try:
            if action == "settings":
                hide = request.POST.get("hide_dead_letter_payloads") == "on"
                services.workspace_update(
                    workspace=workspace, actor=request.user, data={"hide_dead_letter_payloads": hide}
                )
                messages.success(request, "Saved.")
                return redirect("workspaces:members", pk=workspace.pk)
            if action == "add":
                form = MemberAddForm(request.POST)
                if form.is_valid():
                    membership = services.member_add(workspace=workspace, actor=request.user, **form.cleaned_data)
                    messages.success(request, f"{membership.user.get_username()} added as {membership.role}.")
                    return redirect("workspaces:members", pk=workspace.pk)
            elif action == "invite":
                invite_form = InviteForm(request.POST)
                if invite_form.is_valid():
                    _invite, secret = invites.invite_create(
                        workspace=workspace, actor=request.user, **invite_form.cleaned_data
                    )
                    # Shown in this answer only (not in a flash message, which the session would keep).
                    invite_link = request.build_absolute_uri(reverse("workspaces:invite_accept", args=[secret]))
                    invite_form = InviteForm()
            elif action in ("role", "remove"):
                membership = selectors.membership_get(workspace=workspace, pk=request.POST.get("member"))
                if action == "role":
                    services.member_role_change(
                        membership=membership, actor=request.user, role=request.POST.get("role", "")
                    )
                    messages.success(request, f"{membership.user.get_username()} is now {request.POST.get('role')}.")
                else:
                    services.member_remove(membership=membership, actor=request.user)
                    messages.success(request, f"{membership.user.get_username()} removed.")
                return redirect("workspaces:members", pk=workspace.pk)
        except (ValidationError, ApplicationError) as exc:
            _errors(request, exc)
    return render(
        request,
        "workspaces/members.html",
        {
            "workspace": workspace,
            "members": selectors.membership_list(workspace=workspace),
            "form": form,
            "invite_form": invite_form,
            "invite_link": invite_link,
            "invites": invites.invite_pending_list(workspace=workspace).select_related("created_by"),
            "roles": Role.choices,
            "may_manage": policy.may(request.user, "member.manage", workspace),
        },
    )


@require_http_methods(["GET", "POST"])
def invite_accept_page(request: HttpRequest, secret: str) -> HttpResponse:
    """The invite link: a new user picks a name and password and lands in the workspace, signed in."""
    try:
        invite = invites.invite_for_link(secret=secret)
    except invites.InviteGone as gone:
        return render(request, "workspaces/invite_accept.html", {"gone": gone.message}, status=410)
    form = InviteAcceptForm(request.POST or None, initial={"email": invite.email})
    if request.method == "POST" and form.is_valid():
        try:
            user = invites.invite_accept(
                secret=secret, **{k: form.cleaned_data[k] for k in ("username", "password", "email")}
            )
        except invites.InviteGone as gone:
            return render(request, "workspaces/invite_accept.html", {"gone": gone.message}, status=410)
        except ValidationError as exc:
            for field, problems in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, problems)
        else:
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            current_workspace_switch(request, invite.workspace)
            messages.success(request, f"Welcome, {user.get_username()}: you are {invite.role} of {invite.workspace}.")
            return redirect("pipelines:list")
    return render(request, "workspaces/invite_accept.html", {"invite": invite, "form": form})
