"""Key advice and samples are read by the worker (`webapp.connections.heavy_requests`): in a test without one, the
test plays the worker, then asks for the answer as a client would."""

from __future__ import annotations

import re
from typing import Any

from webapp.connections.heavy_requests import heavy_request_run


def answered(client: Any, response: Any) -> Any:
    """The answer at the URL a `202 Accepted` names, once the request has run; any other response as it is."""
    if response.status_code != 202:
        return response
    body = response.json()
    heavy_request_run(request_id=body["id"])
    return client.get(body["url"])


POLL = re.compile(r'data-poll="(?P<url>[^"]*/(?P<id>[0-9a-f-]{36})/)"')


def page_answered(client: Any, response: Any) -> Any:
    """The partial the page shows once the worker has read the events: the request the "reading" partial names
    is run here, then its poll URL asked once; any other response as it is."""
    found = POLL.search(response.content.decode())
    if found is None:
        return response
    heavy_request_run(request_id=found["id"])
    return client.get(found["url"])
