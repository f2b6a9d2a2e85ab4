"""The sign-in's two steps (to the provider and back), with the provider's endpoints discovered; 404 when single
sign-on is not configured, and back to the login page in words when the provider cannot be reached."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from webapp.sso import config
from webapp.sso.backends import oidc_setting


class SsoStartView(OIDCAuthenticationRequestView):
    get_settings = staticmethod(oidc_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if config.enabled():
            try:
                super().__init__(*args, **kwargs)
            except config.SsoConfigError as error:
                self.problem = str(error)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not config.enabled():
            raise Http404("Single sign-on is not configured.")
        if getattr(self, "problem", ""):
            messages.error(request, self.problem)
            return redirect("login")
        return super().get(request)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    get_settings = staticmethod(oidc_setting)

    def get(self, request: HttpRequest) -> HttpResponse:
        if not config.enabled():
            raise Http404("Single sign-on is not configured.")
        try:
            return super().get(request)
        except config.SsoConfigError as error:
            messages.error(request, str(error))
            return redirect("login")

    def login_failure(self) -> HttpResponse:
        messages.error(
            self.request,
            f"Sign-in with {config.provider_name()} did not complete: try again, or ask your administrator "
            "whether your account may use ClearFlow.",
        )
        return redirect("login")


class LoginView(auth_views.LoginView):
    """Django's login page, with a "Sign in with <provider>" button when single sign-on is configured."""

    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["sso_provider"] = config.provider_name() if config.enabled() else ""
        return context
