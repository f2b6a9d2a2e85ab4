"""The wizard's check endpoints answer hostile expressions with a message on the page, never a 500."""

from __future__ import annotations

from django.urls import reverse

from tests.webapp.wizard.test_wizard_steps import submit, walk_to_dedup


def test_transform_check_refuses_jvm_calls_and_deep_nesting(owner_client, kafka_connection, users_topic):
    draft = walk_to_dedup(owner_client, kafka_connection, users_topic)
    submit(owner_client, draft, "dedup", {"enabled": "off"})
    url = reverse("wizard:transform_check", kwargs={"draft_id": draft.pk})
    response = owner_client.post(
        url,
        {
            "filter": "(" * 3000 + "age > 1" + ")" * 3000,
            "c0-name": "env",
            "c0-expression": "java_method('java.lang.System', 'getenv', 'DJANGO_SECRET_KEY')",
            "c0-type": "string",
        },
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "nested too deeply" in html
    assert "function &#x27;java_method&#x27; at line 1, column 1 is not allowed" in html
