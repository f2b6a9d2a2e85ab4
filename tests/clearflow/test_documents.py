"""Pipeline files without a server: reading YAML/JSON, ${VAR} references, repeated names, parts a file must not
hold, the spec checked with the server's own model (same paths and messages), export read back, and settings."""

from __future__ import annotations

import stat

import pytest
from pydantic import SecretStr

from clearflow import DocumentError
from clearflow.client import _new_lines
from clearflow.config import load_settings, normalize_url, save_settings
from clearflow.document_files import RawDocument, read_documents
from clearflow.documents import parse_documents
from clearflow.errors import NotConfiguredError
from clearflow.export import connection_document, env_name, pipeline_document
from clearflow.spec_check import full_spec, spec_issues
from clearflow_spec.connections import ClickHouseConnectionSpec, KafkaConnectionSpec
from clearflow_spec.spec import SpecError, parse_spec

KAFKA = KafkaConnectionSpec(bootstrap_servers="broker:9092")
CLICKHOUSE = ClickHouseConnectionSpec(host="ch", password=SecretStr("x"))
SPEC = {
    "source": {"topics": ["users"], "fields": [{"path": "event_id", "type": "uuid"}, {"path": "n", "type": "int"}]},
    "dedup": {"keys": ["event_id"], "window": "1h"},
    "sink": {
        "clickhouse": {"database": "analytics"},
        "table": "signups",
        "columns": [
            {"field": "event_id", "column": "event_id", "type": "UUID"},
            {"field": "n", "column": "n", "type": "Int64"},
        ],
    },
}


def pipeline(spec: dict | None = None, **fields) -> dict:
    return {
        "kind": "pipeline",
        "name": "signups",
        "kafka_connection": "k",
        "clickhouse_connection": "c",
        "spec": spec or SPEC,
        **fields,
    }


def parse(*documents: dict, env: dict | None = None):
    raws = [RawDocument(f"doc{i}", d) for i, d in enumerate(documents, 1)]
    return parse_documents(raws, env=env or {})


def problems(*documents: dict, env: dict | None = None) -> list[tuple[str, str]]:
    with pytest.raises(DocumentError) as refused:
        parse(*documents, env=env)
    return [(e.path, e.message) for e in refused.value.errors]


@pytest.mark.fast
def test_variables_defaults_and_dollar_escapes_in_connection_documents():
    docs = parse(
        {
            "kind": "clickhouse-connection",
            "name": "c",
            "host": "ch.internal",
            "port": 8124,
            "username": "u$$er",
            "password": "${CH_PASSWORD}",
            "env": ["CH_PASSWORD"],
        },
        env={"CH_PASSWORD": "s3cret"},
    )
    [connection] = docs.connections
    assert connection.settings["host"] == "ch.internal" and connection.settings["port"] == 8124
    assert connection.settings["username"] == "u$er"
    assert connection.body()["password"] == "s3cret" and connection.notes == []
    [default] = parse(
        {"kind": "clickhouse-connection", "name": "c", "host": "h", "password": "${CH_PW:-pa$$word}", "env": ["CH_PW"]}
    ).connections
    assert default.body()["password"] == "pa$word"


@pytest.mark.fast
def test_only_secrets_read_the_environment():
    """A file from a pull request must not copy a CI runner's variables into a plain field (stored, printed by
    diff) nor into a URL the server contacts."""
    env = {"AWS_SECRET_ACCESS_KEY": "leaked-42", "CI_TOKEN": "leaked-43"}
    for field, value in (
        ("host", "${AWS_SECRET_ACCESS_KEY}.attacker.example"),
        ("username", "${CI_TOKEN}"),
        ("database", "x${CI_TOKEN:-y}"),
    ):
        document = {"kind": "clickhouse-connection", "name": "c", "host": "h", field: value, "env": list(env)}
        [(path, message)] = problems(document, env=env)
        assert path == field and "leaked" not in message
        assert message.startswith("$") and "only secrets (password) read environment variables" in message
    registry = {"kind": "schema-registry-connection", "name": "r", "url": "http://${CI_TOKEN}.example/"}
    assert problems(registry, env=env)[0][0] == "url"
    kafka = {"kind": "kafka-connection", "name": "k", "bootstrap_servers": "${CI_TOKEN}:9092"}
    assert problems(kafka, env=env)[0][0] == "bootstrap_servers"


@pytest.mark.fast
def test_a_secret_reads_only_the_variables_its_document_declares():
    document = {"kind": "clickhouse-connection", "name": "c", "host": "h", "password": "${CI_TOKEN}"}
    [(path, message)] = problems(document, env={"CI_TOKEN": "leaked-43"})
    assert path == "password"
    assert (
        message == "${CI_TOKEN} is not declared: list the variables this document's secrets read in `env: [CI_TOKEN]`"
    )
    declared_other = {**document, "env": ["CH_PASSWORD"]}
    assert problems(declared_other, env={"CI_TOKEN": "leaked-43"})[0][0] == "password"
    assert problems({**document, "env": "CI_TOKEN"})[0] == (
        "env",
        "a list of environment variable names: env: [CLICKHOUSE_PASSWORD]",
    )
    assert problems({**document, "env": ["not a name"]})[0] == (
        "env",
        "'not a name' is not an environment variable's name",
    )


@pytest.mark.fast
def test_a_secret_whose_variable_is_unset_is_kept_and_a_literal_secret_is_noted():
    connection = {"kind": "clickhouse-connection", "name": "c", "host": "h"}
    [kept] = parse({**connection, "password": "${CH_PASSWORD}", "env": ["CH_PASSWORD"]}).connections
    assert kept.secrets == {"password": None} and "password" not in kept.body()
    assert kept.notes == ["password: ${CH_PASSWORD} is not set, so the saved password is kept"]
    [literal] = parse({**connection, "password": "plain"}).connections
    assert literal.notes == ["password is written in the file: use ${ENV_VAR} to keep it out of version control"]
    [cleared] = parse(connection).connections
    assert cleared.body()["password"] == ""


@pytest.mark.fast
def test_an_unset_variable_elsewhere_and_a_bad_setting_are_errors_with_their_field():
    unset = {"kind": "kafka-connection", "name": "k", "bootstrap_servers": "b:1", "sasl_password": "x${NOPE}"}
    assert problems({**unset, "env": ["NOPE"]}) == [
        ("sasl_password", "environment variable NOPE is not set (or empty)")
    ]
    assert problems({"kind": "kafka-connection", "name": "k", "bootstrap_servers": "no-port"}) == [
        ("bootstrap_servers", "invalid server 'no-port': expected host:port[,host:port...]")
    ]
    assert problems({"kind": "kafka-connection", "name": "k", "bootstrap_servers": "b:1", "colour": "x"}) == [
        ("colour", "Extra inputs are not permitted")
    ]


@pytest.mark.fast
def test_a_pipeline_file_holds_no_connection_details_and_its_own_name():
    spec = {**SPEC, "name": "other", "source": {**SPEC["source"], "kafka": {"bootstrap_servers": "b:1"}}}
    spec["sink"] = {**SPEC["sink"], "clickhouse": {"database": "analytics", "host": "ch"}}
    assert problems(pipeline(spec), pipeline(colour="red", name="x")) == [
        ("spec.name", "differs from the pipeline's name 'signups': leave it out"),
        ("spec.source.kafka", "comes from the connection named in kafka_connection: leave it out"),
        (
            "spec.sink.clickhouse.host",
            "comes from the connection named in clickhouse_connection (only database goes here)",
        ),
        (
            "colour",
            "unknown field; a pipeline has kind, name, kafka_connection, clickhouse_connection, "
            "schema_registry_connection, spec",
        ),
    ]


@pytest.mark.fast
def test_kinds_and_repeated_names():
    kinds = "kafka-connection, clickhouse-connection, schema-registry-connection, pipeline"
    assert problems({"name": "x"}, {"kind": "pipelin"}) == [
        ("kind", f"no kind: each document needs kind {kinds}"),
        ("kind", f"kind 'pipelin': each document needs kind {kinds}"),
    ]
    twice = "pipeline 'signups' is defined twice: also in doc1 (pipeline 'signups')"
    assert problems(pipeline(), pipeline()) == [("name", twice)]
    kafka = {"kind": "kafka-connection", "name": "k", "bootstrap_servers": "b:1"}
    assert len(parse(kafka, dict(kafka)).connections) == 1  # the same twice: once
    assert problems(kafka, {**kafka, "bootstrap_servers": "b:2"}) == [
        ("name", "kafka-connection 'k' is defined differently in doc1 (kafka-connection 'k')")
    ]


@pytest.mark.fast
def test_yaml_keys_given_twice_are_an_error_and_dates_stay_text(tmp_path):
    (tmp_path / "twice.yaml").write_text("kind: pipeline\nname: a\nname: b\n")
    with pytest.raises(DocumentError) as refused:
        read_documents([str(tmp_path / "twice.yaml")])
    assert str(refused.value.errors[0]) == "line 3, column 1: key 'name' is given twice"
    (tmp_path / "dates.yaml").write_text("kind: pipeline\ntopics: [2026-01-01]\n---\nkind: pipeline\n")
    first, second = read_documents([str(tmp_path / "dates.yaml")])
    assert first.data["topics"] == ["2026-01-01"] and (first.where, second.where) == (
        f"{tmp_path}/dates.yaml, document 1",
        f"{tmp_path}/dates.yaml, document 2",
    )
    (tmp_path / "empty").mkdir()
    with pytest.raises(DocumentError, match=r"no \.yaml, \.yml, \.json files"):
        read_documents([str(tmp_path / "empty")])


BROKEN_SPECS = [
    {**SPEC, "dedup": {"keys": ["missing"], "window": "1h"}},
    {**SPEC, "dedup": {"keys": ["event_id"], "window": "9d"}},
    {**SPEC, "filter": "n >", "transforms": [{"name": "n", "expression": "reflect('a', 'b')", "type": "int"}]},
    {**SPEC, "sink": {**SPEC["sink"], "columns": [{"field": "n", "column": "n", "type": "UUID"}], "order_by": ["x"]}},
    {**SPEC, "source": {"topics": [], "fields": []}},
    {**SPEC, "sink": {**SPEC["sink"], "clickhouse": {"database": "no-dashes"}}},
]


@pytest.mark.parametrize("spec", BROKEN_SPECS)
def test_the_client_finds_what_the_server_finds_with_the_same_paths_and_messages(spec, db):
    """The server's check (`stored_specs.parse` with saved connections, errors as the API writes them) and the
    client's, for the same spec."""
    from webapp.api.exception_handlers import spec_path
    from webapp.connections.models import ClickHouseConnection, KafkaConnection
    from webapp.pipelines import stored_specs

    [document] = parse(pipeline(spec)).pipelines
    client = [(e.path, e.message) for e in spec_issues(document, kafka=KAFKA, clickhouse=CLICKHOUSE)]
    with pytest.raises(SpecError) as server:
        stored_specs.parse(
            spec,
            name="signups",
            kafka_connection=KafkaConnection(name="k", bootstrap_servers="broker:9092"),
            clickhouse_connection=ClickHouseConnection(name="c", host="ch", password="x"),
        )
    assert client and client == [(spec_path(i.path), i.message) for i in server.value.errors]


@pytest.mark.fast
def test_an_export_read_back_is_the_stored_spec():
    stored = parse_spec(
        {"version": 1, "name": "signups", **{**SPEC, "source": {**SPEC["source"], "kafka": KAFKA.model_dump()}}}
        | {"sink": {**SPEC["sink"], "clickhouse": {**CLICKHOUSE.model_dump(), "database": "analytics"}}}
    ).to_dict()
    document = pipeline_document({"name": "signups", "spec": stored}, kafka_connection="k", clickhouse_connection="c")
    assert "kafka" not in document["spec"]["source"]
    assert document["spec"]["sink"]["clickhouse"] == {"database": "analytics"}
    assert "filter" not in document["spec"]  # null: left out
    [back] = parse(document).pipelines
    assert parse_spec(full_spec(back, kafka=KAFKA, clickhouse=CLICKHOUSE)).to_dict() == stored


@pytest.mark.fast
def test_a_connection_export_writes_references_for_the_secrets_that_are_set():
    saved = {"name": "prod kafka", "bootstrap_servers": "b:1", "security_protocol": "SASL_SSL",
             "sasl_mechanism": "PLAIN", "sasl_username": "u", "has_sasl_password": True, "ssl_ca_pem": "",
             "ssl_certificate_pem": "", "has_ssl_key": False}  # fmt: skip
    from clearflow.documents import KAFKA as KAFKA_KIND

    assert connection_document(KAFKA_KIND, saved) == {
        "kind": "kafka-connection",
        "name": "prod kafka",
        "bootstrap_servers": "b:1",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "sasl_username": "u",
        "sasl_password": "${PROD_KAFKA_SASL_PASSWORD}",
        "env": ["PROD_KAFKA_SASL_PASSWORD"],
    }
    assert env_name("9 lives", "password") == "CONNECTION_9_LIVES_PASSWORD"


@pytest.mark.fast
def test_export_escapes_a_literal_dollar_and_apply_reads_it_back():
    from clearflow.documents import CLICKHOUSE as CLICKHOUSE_KIND

    saved = {"name": "c", "host": "ch", "port": 8123, "username": "u$${HOME}er", "has_password": True,
             "database": "default", "secure": False, "verify": True, "ssl_ca_pem": ""}  # fmt: skip
    document = connection_document(CLICKHOUSE_KIND, saved)
    assert document["username"] == "u$$$${HOME}er" and document["env"] == ["C_PASSWORD"]
    [connection] = parse(document, env={"HOME": "/root"}).connections
    assert connection.settings["username"] == "u$${HOME}er"


@pytest.mark.fast
def test_following_a_log_prints_only_the_new_lines():
    assert _new_lines([], ["a", "b"]) == ["a", "b"]
    assert _new_lines(["a", "b", "c"], ["b", "c", "d", "e"]) == ["d", "e"]
    assert _new_lines(["a", "b"], ["a", "b"]) == []
    assert _new_lines(["x", "y"], ["p", "q"]) == ["p", "q"]  # a new run's log


@pytest.mark.fast
def test_settings_come_from_arguments_then_the_environment_then_the_file(tmp_path):
    env = {"HOME": str(tmp_path)}
    with pytest.raises(NotConfiguredError, match="CLEARFLOW_URL and CLEARFLOW_TOKEN not set"):
        load_settings(env=env)
    path = save_settings(load_settings("host:8000/api/v1/", "t1", env=env), env=env)
    assert path == tmp_path / ".config" / "clearflow" / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert load_settings(env=env).url == "http://host:8000"
    assert load_settings(env={**env, "CLEARFLOW_TOKEN": "t2"}).token == "t2"
    assert "t1" not in repr(load_settings(env=env))
    assert normalize_url("https://cf.example.com/") == "https://cf.example.com"
