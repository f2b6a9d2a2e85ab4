from django.urls import path

from webapp.sso import views

urlpatterns = [
    path("oidc/authenticate/", views.SsoStartView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", views.SsoCallbackView.as_view(), name="oidc_authentication_callback"),
]
