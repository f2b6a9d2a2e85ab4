"""The API tokens page (a person's own tokens), at /account/tokens/."""

from django.urls import path

from webapp.api import views

urlpatterns = [
    path("account/tokens/", views.token_list, name="account_tokens"),
]
