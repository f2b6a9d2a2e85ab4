"""Logins are throttled per user name and address, and per address across user names (password spraying);
the address is the one the nearest trusted proxy saw."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model


@pytest.fixture
def users(db):
    model = get_user_model()
    return [model.objects.create_user(f"user{i}", password=f"right-pass-{i}") for i in range(25)]


def login(client, username: str, password: str, **extra) -> bool:
    client.post("/login/", {"username": username, "password": password}, **extra)
    logged_in = "_auth_user_id" in client.session
    client.logout()
    return logged_in


def test_one_address_spraying_one_password_over_many_users_is_locked_out(client, users, settings):
    assert settings.LOGIN_FAILURES_PER_ADDRESS == 20
    for user in users[:19]:
        assert not login(client, user.username, "Summer2026!")
    assert login(client, "user19", "right-pass-19")  # 19 failures: the address may still log in
    for user in users[19:20]:
        assert not login(client, user.username, "Summer2026!")
    # 20 failures over 20 user names: the address is locked out, right passwords included...
    assert not login(client, "user21", "right-pass-21")
    response = client.post("/login/", {"username": "user22", "password": "right-pass-22"})
    assert response.status_code in (403, 429)
    # ...but not another address.
    assert login(client, "user21", "right-pass-21", REMOTE_ADDR="203.0.113.9")


def test_one_user_name_from_one_address_is_locked_after_fewer_failures(client, users):
    for _ in range(5):
        assert not login(client, "user0", "wrong")
    assert not login(client, "user0", "right-pass-0")  # locked: user0 from this address
    assert login(client, "user1", "right-pass-1")  # the address itself is not (5 of its 20)
    assert login(client, "user0", "right-pass-0", REMOTE_ADDR="203.0.113.9")  # nor user0 elsewhere


def test_behind_a_proxy_the_address_is_the_one_the_proxy_appended(client, users, settings):
    settings.CLEARFLOW_PROXY_COUNT = 1
    proxy = {"REMOTE_ADDR": "172.18.0.5"}  # nginx, the same for every client
    for i in range(5):
        # The client forges the left of X-Forwarded-For differently each time; nginx appends what it saw.
        forwarded = {"HTTP_X_FORWARDED_FOR": f"198.51.100.{i}, 203.0.113.7"}
        assert not login(client, "user0", "wrong", **proxy, **forwarded)
    assert not login(client, "user0", "right-pass-0", **proxy, HTTP_X_FORWARDED_FOR="1.2.3.4, 203.0.113.7")
    # Another client behind the same nginx is not locked out with it.
    assert login(client, "user0", "right-pass-0", **proxy, HTTP_X_FORWARDED_FOR="203.0.113.8")


def test_without_a_proxy_a_forged_header_is_ignored(client, users):
    for i in range(5):
        assert not login(client, "user0", "wrong", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}")
    assert not login(client, "user0", "right-pass-0", HTTP_X_FORWARDED_FOR="198.51.100.200")
