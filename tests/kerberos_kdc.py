"""A Kerberos realm for the tests: MIT's KDC (Debian's krb5-kdc, installed by localstack/system-deps.sh) on a free
port, its database, a broker principal and a client principal with their keytabs, all in a temp dir.

The session's broker gets a GSSAPI listener whose principal is `kafka/localhost`: Java's Kafka client asks for
the service ticket of the host it reverse-resolves (127.0.0.1 is "localhost"). The KDC speaks TCP only (the
clients' krb5.conf says `udp_preference_limit = 1`).
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from localstack.processes import ServiceDef, free_port, tcp_open

REALM = "CLEARFLOW.TEST"
BROKER_PRINCIPAL = f"kafka/localhost@{REALM}"
CLIENT_PRINCIPAL = f"clearflow-job@{REALM}"
_SBIN = ("/usr/sbin", "/usr/local/sbin")


def _tool(name: str) -> str | None:
    return shutil.which(name) or next((f"{d}/{name}" for d in _SBIN if os.access(f"{d}/{name}", os.X_OK)), None)


def kdc_installed() -> bool:
    return all(_tool(name) for name in ("krb5kdc", "kdb5_util", "kadmin.local"))


@dataclass(frozen=True)
class TestRealm:
    directory: Path
    port: int
    realm: str = REALM

    @property
    def krb5_conf(self) -> Path:
        return self.directory / "krb5.conf"

    @property
    def broker_keytab(self) -> Path:
        return self.directory / "broker.keytab"

    @property
    def client_keytab(self) -> Path:
        return self.directory / "client.keytab"

    @property
    def kdc(self) -> str:
        return f"127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.directory / "kdc.conf"),
        }

    def service(self) -> ServiceDef:
        return ServiceDef(
            name="krb5kdc",
            argv=[_tool("krb5kdc") or "krb5kdc", "-n", "-r", self.realm],
            env={k: v for k, v in self.env().items() if k in ("KRB5_CONFIG", "KRB5_KDC_PROFILE")},
            ready=lambda: tcp_open("127.0.0.1", self.port),
            ready_timeout=20,
        )

    def client_keytab_base64(self) -> str:
        return base64.b64encode(self.client_keytab.read_bytes()).decode()


def make_realm(directory: Path) -> TestRealm:
    """The realm's database, principals and keytabs in `directory` (the KDC is `realm.service()`)."""
    realm = TestRealm(directory=directory, port=free_port())
    (directory / "kdc.conf").write_text(
        "[kdcdefaults]\n"
        f"  kdc_ports = {realm.port}\n"
        f"  kdc_tcp_ports = {realm.port}\n"
        "[realms]\n"
        f"  {REALM} = {{\n"
        f"    database_name = {directory}/principal\n"
        f"    key_stash_file = {directory}/stash\n"
        f"    acl_file = {directory}/kadm5.acl\n"
        "    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
        "  }\n"
        "[logging]\n"
        f"  kdc = FILE:{directory}/kdc.log\n"
    )
    realm.krb5_conf.write_text(
        "[libdefaults]\n"
        f"  default_realm = {REALM}\n"
        "  udp_preference_limit = 1\n"
        "  dns_lookup_kdc = false\n"
        "  dns_lookup_realm = false\n"
        "  rdns = false\n"
        "[realms]\n"
        f"  {REALM} = {{\n    kdc = 127.0.0.1:{realm.port}\n  }}\n"
    )
    (directory / "kadm5.acl").write_text("")
    env = realm.env()

    def run(*argv: str) -> None:
        subprocess.run(argv, env=env, check=True, capture_output=True, timeout=60)

    run(_tool("kdb5_util") or "kdb5_util", "create", "-s", "-r", REALM, "-P", "test-master-key")
    kadmin = _tool("kadmin.local") or "kadmin.local"
    for principal, keytab in ((BROKER_PRINCIPAL, realm.broker_keytab), (CLIENT_PRINCIPAL, realm.client_keytab)):
        run(kadmin, "-r", REALM, "-q", f"addprinc -randkey {principal}")
        run(kadmin, "-r", REALM, "-q", f"ktadd -k {keytab} {principal}")
    return realm
