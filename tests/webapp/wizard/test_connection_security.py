"""The wizard's "Test connection" for a new secured Kafka connection, against the real broker's listeners: it
connects in every mode, and a wrong password, an unknown CA or a missing client certificate is named in the
form in plain words."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from tests.kafka_security import MODES
from webapp.wizard.models import WizardDraft

pytestmark = pytest.mark.django_db


def _test_new_connection(client, connection: dict) -> str:
    """Post the wizard's "Test connection" with a new connection's fields; the alert's text."""
    assert client.get(reverse("wizard:wizard_new")).status_code == 302
    draft = WizardDraft.objects.get(pipeline__isnull=True)
    form = {"source": "new", "new-name": "secured"}
    form.update({f"new-{name}": value or "" for name, value in connection.items()})
    response = client.post(reverse("wizard:kafka_test", kwargs={"draft_id": draft.pk}), form)
    assert response.status_code == 200
    alert = re.search(r'role="(?:alert|status)"[^>]*>(.*?)</div>', response.content.decode(), flags=re.S)
    assert alert is not None, response.content.decode()
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", alert.group(1))).split())


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_connects(owner_client, secured_kafka, mode):
    connection = secured_kafka.connection(mode)
    text = _test_new_connection(owner_client, connection)
    assert text.startswith("Connected."), text
    assert connection["bootstrap_servers"] in text


def test_a_wrong_password_is_named_in_the_form(owner_client, secured_kafka):
    text = _test_new_connection(owner_client, {**secured_kafka.connection("scram_sha_256"), "sasl_password": "nope"})
    assert text.startswith(
        "Connection failed. SASL authentication failed: The broker rejected the user name or password (SCRAM-SHA-256)."
    ), text


def test_an_unknown_ca_is_named_in_the_form(owner_client, secured_kafka):
    connection = {**secured_kafka.connection("ssl"), "ssl_ca_pem": secured_kafka.unknown_ca.certificate_pem}
    text = _test_new_connection(owner_client, connection)
    assert "The broker's TLS certificate at" in text and "is not signed by the CA certificate given" in text, text


def test_a_missing_client_certificate_is_named_in_the_form(owner_client, secured_kafka):
    connection = {**secured_kafka.connection("mtls"), "ssl_certificate_pem": None, "ssl_key_pem": None}
    text = _test_new_connection(owner_client, connection)
    assert "it requires a client certificate signed by a CA it trusts (mutual TLS)" in text, text


def test_clickhouse_behind_a_private_ca_connects_with_its_ca_and_is_refused_without(owner_client, clickhouse_tls):
    assert owner_client.get(reverse("wizard:wizard_new")).status_code == 302
    draft = WizardDraft.objects.get(pipeline__isnull=True)
    url = reverse("wizard:clickhouse_test", kwargs={"draft_id": draft.pk})
    fields = {
        "source": "new",
        "new-name": "warehouse",
        "new-host": clickhouse_tls.host,
        "new-port": clickhouse_tls.port,
        "new-username": "default",
        "new-database": "default",
        "new-secure": "on",
        "new-verify": "on",
    }
    page = owner_client.post(url, {**fields, "new-ssl_ca_pem": clickhouse_tls.ca_pem}).content.decode()
    assert "Connected." in page and "ClickHouse 26." in page, page
    page = html.unescape(owner_client.post(url, fields).content.decode())
    assert "Connection failed." in page and "The HTTPS connection to" in page, page


@pytest.mark.parametrize("kind", ["kafka", "clickhouse"])
def test_the_new_connection_form_shows_every_setting_of_the_spec_once(owner_client, kind):
    """The wizard's form lists the connection model's fields (read from the spec's model): each has one input."""
    from webapp.connections.kinds import CLICKHOUSE, KAFKA

    model = {"kafka": KAFKA, "clickhouse": CLICKHOUSE}[kind].model
    assert owner_client.get(reverse("wizard:wizard_new")).status_code == 302
    draft = WizardDraft.objects.get(pipeline__isnull=True)
    if kind == "clickhouse":  # the ClickHouse step opens once the earlier steps are reached
        draft.reached = draft.step = "clickhouse"
        draft.save()
    page = owner_client.get(reverse("wizard:step", kwargs={"draft_id": draft.pk, "step": kind})).content.decode()
    for name in model.EDITABLE_FIELDS:
        assert len(re.findall(rf'name="new-{name}"', page)) == 1, name
