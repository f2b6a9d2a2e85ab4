"""docker-compose.yml cannot be started here (no Docker engine), so its consistency is checked instead:
every variable the settings read is provided to the app's services, images are official and pinned,
secrets come from the environment, and nginx proxies to where the web app listens."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
APP_SERVICES = ("web", "worker", "beat", "migrate")
# Plus Docker's library images (no namespace); andrewgaul/ is S3Proxy's author's own.
OFFICIAL_NAMESPACES = ("apache/", "clickhouse/", "apicurio/", "andrewgaul/")
DOCKERFILES = [REPO / "Dockerfile", *sorted((REPO / "docker").glob("*.Dockerfile"))]
SECRETS = ("DJANGO_SECRET_KEY", "CLEARFLOW_ENCRYPTION_KEY", "CLICKHOUSE_PASSWORD", "POSTGRES_PASSWORD")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def settings_variables() -> set[str]:
    names = set()
    for path in (REPO / "webapp" / "config").rglob("*.py"):
        names |= set(re.findall(r'env_(?:str|int|bool|list|secret)\(\s*"([A-Z0-9_]+)"', path.read_text()))
    return names


@pytest.mark.fast
def test_the_settings_read_variables_through_the_one_env_reader() -> None:
    assert {"DATABASE_URL", "REDIS_URL", "KAFKA_BOOTSTRAP_SERVERS", "CLICKHOUSE_HOST", "DJANGO_SECRET_KEY"} <= (
        settings_variables()
    )
    for path in (REPO / "webapp").rglob("*.py"):
        assert "os.environ" not in path.read_text() or path.name in {"env.py", "wsgi.py", "asgi.py"}, path


@pytest.mark.fast
def test_every_variable_the_settings_read_is_set_for_every_app_service(compose: dict) -> None:
    for name in APP_SERVICES:
        environment = compose["services"][name]["environment"]
        missing = settings_variables() - set(environment)
        assert not missing, f"{name} lacks {sorted(missing)}"


@pytest.mark.fast
def test_the_local_stack_uses_the_same_variable_names(compose: dict) -> None:
    stack_config = (REPO / "localstack" / "stack_config.py").read_text()  # StackConfig.from_env
    read_by_make_up = set(re.findall(r'env\.get\("([A-Z0-9_]+)"', stack_config))
    local_only = {"WEB_BIND"}  # gunicorn's bind address is the command line in compose
    assert read_by_make_up - local_only <= set(compose["services"]["web"]["environment"])


@pytest.mark.fast
def test_images_are_official_and_pinned(compose: dict) -> None:
    images = [service["image"] for service in compose["services"].values() if "build" not in service]
    images = [image for image in images if not image.startswith("clearflow/")]
    for dockerfile in DOCKERFILES:
        images += base_images(dockerfile)
    assert len(images) >= 8
    for image in images:
        name, _, tag = image.partition(":")
        assert "/" not in name or name.startswith(OFFICIAL_NAMESPACES), f"{image} is not an official image"
        assert tag and tag != "latest" and re.match(r"\d", tag), f"{image} is not pinned to a version"


def base_images(dockerfile: Path) -> list[str]:
    """The images a Dockerfile's stages start from, its ARG defaults filled in (a stage named earlier is not one)."""
    text = dockerfile.read_text()
    args = dict(re.findall(r"^ARG\s+([A-Z_]+)=(\S+)", text, flags=re.MULTILINE))
    stages = set(re.findall(r"^FROM\s+\S+\s+AS\s+(\S+)", text, flags=re.MULTILINE | re.IGNORECASE))
    found = [
        re.sub(r"\$\{([A-Z_]+)\}", lambda m: args[m.group(1)], image)
        for image in re.findall(r"^FROM\s+(\S+)", text, flags=re.MULTILINE)
    ]
    return [image for image in found if image not in stages]


@pytest.mark.fast
def test_the_images_copy_every_package_the_install_includes() -> None:
    """`pip install .` in an image installs only what was copied in: each top-level package pyproject.toml includes
    is copied, or the image lacks it (the rules package, clearflow_spec, was once left out)."""
    patterns = re.search(r"include = \[([^\]]*)\]", (REPO / "pyproject.toml").read_text()).group(1)
    prefixes = [p.strip().strip('"').rstrip("*") for p in patterns.split(",")]
    packages = sorted(
        path.name
        for path in REPO.iterdir()
        if (path / "__init__.py").exists() and any(path.name.startswith(prefix) for prefix in prefixes)
    )
    assert "clearflow_spec" in packages and "spark_jobs" in packages
    for dockerfile in DOCKERFILES:
        copied = set(re.findall(r"^COPY (\S+) \./\1$", dockerfile.read_text(), re.M))
        assert not set(packages) - copied, (dockerfile.name, sorted(set(packages) - copied))


@pytest.mark.fast
def test_the_images_have_the_spark_python_and_jars_that_make_install_builds(compose: dict) -> None:
    """One Spark version (the pyspark pin), one Python minor version (this install's) and the jars `make install`
    resolves, in both images and in compose."""
    import sys

    pin = re.search(r'"pyspark==([0-9.]+)"', (REPO / "pyproject.toml").read_text()).group(1)
    for dockerfile in DOCKERFILES:
        text = dockerfile.read_text()
        [base] = set(base_images(dockerfile))
        assert base.startswith(f"python:{sys.version_info.major}.{sys.version_info.minor}."), (dockerfile, base)
        assert re.search(r"pip install \.", text), f"{dockerfile} installs pyspark other than from pyproject.toml"
        assert "pyspark==" not in text and "apache/spark" not in text and not re.search(r"\b4\.\d+\.\d+\b", text)
    assert "python -m localstack jars" in (REPO / "Makefile").read_text().replace("$(PY)", "python")
    assert "/venv/bin/python -m localstack jars" in (REPO / "Dockerfile").read_text()  # the same bundles
    # The Spark image is tagged with the app's version (the Spark in it is the pin's), never a Spark version.
    app_tag = compose["services"]["web"]["image"].partition(":")[2]
    for name in ("spark-master", "spark-worker"):
        assert compose["services"][name]["image"] == f"clearflow/spark:{app_tag}", name
    assert not re.search(
        rf"spark\S*:(?!{re.escape(app_tag)})\d+\.\d+\.\d+", (REPO / "docker-compose.yml").read_text()
    ), pin


@pytest.mark.fast
def test_secrets_come_from_the_environment_never_literals(compose: dict) -> None:
    for service in compose["services"].values():
        environment = service.get("environment") or {}
        for key in SECRETS:
            if key in environment:
                assert re.fullmatch(r"\$\{" + key + r":\?[^}]+\}", str(environment[key])), (key, environment[key])
    assert "${POSTGRES_PASSWORD:?" in compose["services"]["web"]["environment"]["DATABASE_URL"]


@pytest.mark.fast
def test_nginx_serves_static_files_and_proxies_to_the_web_app(compose: dict) -> None:
    nginx = compose["services"]["nginx"]
    config_mount = next(volume for volume in nginx["volumes"] if "conf" in volume)
    config = (REPO / config_mount.split(":")[0].removeprefix("./")).read_text()
    web_bind = compose["services"]["web"]["command"][compose["services"]["web"]["command"].index("--bind") + 1]
    assert f"server web:{web_bind.rsplit(':', 1)[1]};" in config
    assert "location /static/" in config
    assert any(volume.startswith("static:") for volume in nginx["volumes"])


def _compose_value(value: object) -> str:
    """${NAME:-default} -> default; ${NAME:?message} (a required secret) -> a stand-in of a realistic size."""
    text = str(value)
    text = re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", text)
    return re.sub(r"\$\{[A-Z0-9_]+:\?[^}]*\}", "x" * 20 + "Ab1-" + "y" * 30, text)


def test_check_deploy_has_no_warnings_with_compose_settings(compose: dict, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from cryptography.fernet import Fernet

    environment = {name: _compose_value(value) for name, value in compose["services"]["web"]["environment"].items()}
    environment["CLEARFLOW_ENCRYPTION_KEY"] = Fernet.generate_key().decode()
    environment["CLEARFLOW_VAR_DIR"] = str(tmp_path)
    environment["DJANGO_STATIC_ROOT"] = str(tmp_path / "static")
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env={"PATH": os.environ["PATH"], **environment},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.fast
def test_the_image_check_builds_both_images_on_a_local_base_and_checks_rows() -> None:
    """docker/check.sh (run by hand: it needs podman and minutes) builds every Dockerfile with the official base
    replaced through PYTHON_IMAGE, the one argument each Dockerfile declares for it, and ends on the rows check."""
    check = (REPO / "docker" / "check.sh").read_text()
    assert '--build-arg "PYTHON_IMAGE=$BASE_IMAGE"' in check
    for dockerfile in DOCKERFILES:
        assert re.search(r"^ARG PYTHON_IMAGE=", dockerfile.read_text(), re.M), dockerfile
        assert f'-f "$REPO/{dockerfile.relative_to(REPO)}"' in check, dockerfile
    assert "trap cleanup EXIT" in check and "nice -n 19 podman build" in check
    assert 'check_stack.py" pipeline' in check


@pytest.mark.fast
def test_both_images_run_python_from_the_same_venv_path_as_one_user_id() -> None:
    """The driver (app image) names its own interpreter for the executors (spark.pyspark.python), and the driver and
    the executors write the same checkpoints: the Spark image has the venv at the same path, the user the same uid."""
    app, spark = (REPO / "Dockerfile").read_text(), (REPO / "docker" / "spark.Dockerfile").read_text()
    for text in (app, spark):
        assert "python -m venv /opt/clearflow/venv" in text and "/opt/clearflow/venv/bin/pip install ." in text
        assert "--uid 10001" in text and "/var/lib/clearflow-checkpoints" in text
    assert "APP_UID=10001" in (REPO / "docker" / "check.sh").read_text()
    # A Spark worker writes its executors' files there; pyspark's own directory belongs to root.
    assert re.search(r"^ENV SPARK_WORKER_DIR=/var/lib/spark/work$", spark, re.M) and "chown spark" in spark
