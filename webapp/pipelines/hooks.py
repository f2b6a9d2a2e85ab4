"""What other apps may hook into a pipeline's life, so that the pipelines app never imports them.

`pipeline_created` is sent inside `pipeline_create`'s transaction, with `pipeline` (saved, with its first
version): a receiver adds what belongs to its own app (the alerts app: the default rules), and an error in a
receiver rolls the creation back. Receivers connect in their app's `AppConfig.ready()`.
"""

from __future__ import annotations

from django.dispatch import Signal

pipeline_created = Signal()
