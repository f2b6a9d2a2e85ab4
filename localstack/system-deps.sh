#!/usr/bin/env bash
# What pip cannot install: Java and Maven (Spark, Kafka), PostgreSQL and Redis (`make up` and the tests),
# Chromium (browser tests) and MIT Kerberos (the web app's GSSAPI client, the tests' KDC). Installs what is missing with apt-get as root, or
# with `sudo -n` when sudo needs no password; otherwise it stops at once and names the commands to run.
# It never waits for an answer, also when run from a terminal: no password prompt (psql -w, sudo -n), no
# question from apt or dpkg, and stdin is closed for everything below.
# Usage: system-deps.sh build|up|test  (build: only what `make install` needs, Java, Maven, Kerberos headers)
set -euo pipefail
exec </dev/null
purpose="${1:-up}"
missing=()
apt_updated=0

root_ok=0
root=()
if [ "$(id -u)" = 0 ]; then
    root_ok=1
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    root_ok=1
    root=(sudo -n)
fi

can_be_root() { [ "$root_ok" = 1 ]; }

root_cmd() {  # root_cmd <command>...: run as root (never prompts)
    ${root[@]+"${root[@]}"} "$@"
}

install_pkg() {  # install_pkg <command-to-check> <debian-package>...
    local cmd="$1"; shift
    command -v "$cmd" >/dev/null 2>&1 && return 0
    [ -x "$cmd" ] && return 0
    local command_line="apt-get install -y --no-install-recommends $*"
    if can_be_root && command -v apt-get >/dev/null 2>&1; then
        echo "clearflow: installing $* (apt-get)"
        local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -qq -o DPkg::Lock::Timeout=300
                   -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
        if [ "$apt_updated" = 0 ]; then
            root_cmd "${apt[@]}" update >/dev/null || true  # a stale list still installs; the install says if not
            apt_updated=1
        fi
        if ! root_cmd "${apt[@]}" install -y --no-install-recommends "$@" >/dev/null; then
            missing+=("$command_line   (apt-get failed: see its message above)")
        fi
    else
        missing+=("sudo $command_line")
    fi
}

report_missing() {  # exits 1, naming the commands to run, when something could not be installed
    if [ ${#missing[@]} -gt 0 ]; then
        echo "clearflow: missing prerequisites; install them with:" >&2
        printf '  %s\n' "${missing[@]}" >&2
        if ! can_be_root; then
            echo "  (or run this once as root: sudo bash localstack/system-deps.sh $purpose)" >&2
        fi
        exit 1
    fi
}

install_pkg java openjdk-17-jre-headless
install_pkg mvn maven  # resolves the Java bundles (Apache Kafka, Spark's Kafka connector) at install time
# MIT Kerberos's headers and krb5-config: pip builds the `gssapi` package (the web app's GSSAPI Kafka client,
# webapp/connections/kafka_gssapi.py) against them; they bring libgssapi-krb5, which it loads at run time.
install_pkg krb5-config.mit libkrb5-dev
if [ "$purpose" = build ]; then report_missing; exit 0; fi
# `make up` starts its own redis-server when none answers at REDIS_URL; the tests start theirs on free ports.
install_pkg redis-server redis-server
if [ "$purpose" = test ]; then
    install_pkg /usr/lib/chromium/chromium chromium
    # MIT Kerberos: the tests' KDC (tests/kerberos_kdc.py) behind the broker's GSSAPI listener. Its own realm,
    # port and database in a temp dir; the package's system-wide KDC is never configured or started.
    install_pkg /usr/sbin/krb5kdc krb5-kdc krb5-admin-server krb5-user
fi

# PostgreSQL: the default DATABASE_URL (postgres://clearflow@127.0.0.1:5432/clearflow) points at a local server.
# A fresh Debian cluster trusts only local sockets; as root we add the role `clearflow` (CREATEDB, for the tests'
# databases) and let it in over loopback TCP without a password: a development database on this machine only.
local_db_url="${DATABASE_URL:-postgres://clearflow@127.0.0.1:5432/clearflow}"
if [[ "$local_db_url" =~ @(127\.0\.0\.1|localhost)(:([0-9]+))?/ ]]; then
    db_port="${BASH_REMATCH[3]:-5432}"
    cluster_version() { ls /etc/postgresql 2>/dev/null | sort -V | tail -1; }
    if ! pg_isready -q -h 127.0.0.1 -p "$db_port" 2>/dev/null; then
        install_pkg pg_ctlcluster postgresql
        version=$(cluster_version)
        if [ -n "$version" ] && can_be_root && command -v pg_ctlcluster >/dev/null 2>&1; then
            root_cmd pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
            for _ in $(seq 1 20); do pg_isready -q -h 127.0.0.1 -p "$db_port" && break; sleep 0.5; done
        fi
        if ! pg_isready -q -h 127.0.0.1 -p "$db_port" 2>/dev/null; then
            if [ -n "$version" ]; then
                missing+=("sudo pg_ctlcluster --skip-systemctl-redirect $version main start   (PostgreSQL on 127.0.0.1:$db_port; or set DATABASE_URL)")
            else
                missing+=("a PostgreSQL server on 127.0.0.1:$db_port (sudo apt-get install -y postgresql, or set DATABASE_URL)")
            fi
        fi
    fi
    # -w: never ask for a password (psql reads it from the terminal, not from stdin); fail and fix instead.
    if [ -z "${DATABASE_URL:-}" ] && pg_isready -q -h 127.0.0.1 -p "$db_port" 2>/dev/null \
        && ! psql -Xqtw "$local_db_url" -c 'SELECT 1' >/dev/null 2>&1; then
        version=$(cluster_version)
        hba="/etc/postgresql/$version/main/pg_hba.conf"
        if can_be_root && [ -f "$hba" ]; then
            if ! grep -q "clearflow-local" "$hba"; then
                root_cmd sed -i '1i host all clearflow 127.0.0.1/32 trust  # clearflow-local: make test / make up\nhost all clearflow ::1/128 trust  # clearflow-local' "$hba"
                root_cmd pg_ctlcluster --skip-systemctl-redirect "$version" main reload
            fi
            root_cmd runuser -u postgres -- psql -Xqw -d postgres -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'clearflow') THEN CREATE ROLE clearflow LOGIN CREATEDB; END IF;
END $$;
SELECT 'CREATE DATABASE clearflow OWNER clearflow' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'clearflow')\gexec
SQL
            echo "clearflow: PostgreSQL role and database 'clearflow' ready on 127.0.0.1:$db_port"
        fi
        if ! psql -Xqtw "$local_db_url" -c 'SELECT 1' >/dev/null 2>&1; then
            missing+=("sudo bash localstack/system-deps.sh $purpose   (adds the PostgreSQL role 'clearflow' for loopback connections; or set DATABASE_URL)")
        fi
    fi
fi

report_missing
