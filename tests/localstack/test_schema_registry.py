"""The local stack's schema registry (Apicurio, built at install) answers the Confluent schema registry API."""

from __future__ import annotations

import json
import urllib.request
from typing import Any


def _call(base_url: str, method: str, path: str, body: object | None = None) -> Any:
    request = urllib.request.Request(
        base_url + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def test_avro_versions_of_a_subject_get_ids_and_are_read_back(schema_registry_url: str) -> None:
    v1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
    v2 = {**v1, "fields": [*v1["fields"], {"name": "coupon", "type": ["null", "string"], "default": None}]}
    id1 = _call(schema_registry_url, "POST", "/subjects/reg-orders-value/versions", {"schema": json.dumps(v1)})["id"]
    id2 = _call(schema_registry_url, "POST", "/subjects/reg-orders-value/versions", {"schema": json.dumps(v2)})["id"]
    assert id1 != id2
    assert _call(schema_registry_url, "GET", "/subjects/reg-orders-value/versions") == [1, 2]
    latest = _call(schema_registry_url, "GET", "/subjects/reg-orders-value/versions/latest")
    assert (latest["version"], latest["id"], json.loads(latest["schema"])) == (2, id2, v2)
    assert json.loads(_call(schema_registry_url, "GET", f"/schemas/ids/{id1}")["schema"]) == v1


def test_protobuf_schemas_are_registered_with_their_type(schema_registry_url: str) -> None:
    proto = 'syntax = "proto3";\npackage shop;\nmessage Order { string id = 1; int64 qty = 2; }\n'
    body = {"schemaType": "PROTOBUF", "schema": proto}
    registered = _call(schema_registry_url, "POST", "/subjects/reg-pb-value/versions", body)
    read = _call(schema_registry_url, "GET", f"/schemas/ids/{registered['id']}")
    assert read["schemaType"] == "PROTOBUF"
    assert "message Order" in read["schema"]
