"""Django settings, split by concern. Each part reads the environment through `webapp.config.env`."""

from webapp.config.settings.base import *  # noqa: F403
from webapp.config.settings.security import *  # noqa: F403
from webapp.config.settings.services import *  # noqa: F403
from webapp.config.settings.sso import *  # noqa: F403
