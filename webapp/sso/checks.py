"""`manage.py check` (and every start of the web app) refuses a group mapping it cannot read."""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

from webapp.sso import config


@register()
def group_roles_readable(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    try:
        config.group_roles()
    except config.SsoConfigError as error:
        return [Error(str(error), id="sso.E001")]
    return []
