#!/usr/bin/env bash
# What pip cannot install: Java (Spark), PostgreSQL, Redis, and Chromium for the browser tests.
# Installs what is missing with apt-get when running as root; otherwise names the command to run.
# Usage: system-deps.sh build|up|test  (build: only what `make install` needs, Java and Maven)
set -euo pipefail
purpose="${1:-up}"
missing=()
apt_updated=0

install_pkg() {  # install_pkg <command-to-check> <debian-package>...
    local cmd="$1"; shift
    command -v "$cmd" >/dev/null 2>&1 && return 0
    [ -x "$cmd" ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "clearflow: installing $* (apt-get)"
        if [ "$apt_updated" = 0 ]; then apt-get update -qq >/dev/null; apt_updated=1; fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    else
        missing+=("apt-get install -y $*")
    fi
}

report_missing() {  # exits 1, naming the commands to run, when something could not be installed
    if [ ${#missing[@]} -gt 0 ]; then
        echo "clearflow: missing prerequisites; install them with:" >&2
        printf '  %s\n' "${missing[@]}" >&2
        exit 1
    fi
}

install_pkg java openjdk-17-jre-headless
install_pkg mvn maven  # resolves the Java bundles (Apache Kafka, Spark's Kafka connector) at install time
if [ "$purpose" = build ]; then report_missing; exit 0; fi
if [ "$purpose" = test ]; then
    install_pkg redis-server redis-server
    install_pkg /usr/lib/chromium/chromium chromium
fi

# PostgreSQL: the default DATABASE_URL (postgres://clearflow@127.0.0.1:5432/clearflow) points at a local server.
# A fresh Debian cluster trusts only local sockets; as root we add the role `clearflow` (CREATEDB, for the tests'
# databases) and let it in over loopback TCP without a password: a development database on this machine only.
local_db_url="${DATABASE_URL:-postgres://clearflow@127.0.0.1:5432/clearflow}"
if [[ "$local_db_url" == *"@127.0.0.1"* || "$local_db_url" == *"@localhost"* ]]; then
    if ! pg_isready -q -h 127.0.0.1 2>/dev/null; then
        install_pkg pg_ctlcluster postgresql
        if command -v pg_ctlcluster >/dev/null 2>&1; then
            version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
            if [ -n "$version" ]; then
                pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
                for _ in $(seq 1 20); do pg_isready -q -h 127.0.0.1 && break; sleep 0.5; done
            fi
        fi
        pg_isready -q -h 127.0.0.1 2>/dev/null || missing+=("a PostgreSQL server on 127.0.0.1:5432 (or set DATABASE_URL)")
    fi
    if [ -z "${DATABASE_URL:-}" ] && [ "$(id -u)" = 0 ] && pg_isready -q -h 127.0.0.1 2>/dev/null \
        && ! psql -Xqt "$local_db_url" -c 'SELECT 1' >/dev/null 2>&1; then
        version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
        hba="/etc/postgresql/$version/main/pg_hba.conf"
        if [ -f "$hba" ] && ! grep -q "clearflow-local" "$hba"; then
            sed -i '1i host all clearflow 127.0.0.1/32 trust  # clearflow-local: make test / make up\nhost all clearflow ::1/128 trust  # clearflow-local' "$hba"
            pg_ctlcluster --skip-systemctl-redirect "$version" main reload
        fi
        runuser -u postgres -- psql -Xq -d postgres -v ON_ERROR_STOP=1 >/dev/null <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'clearflow') THEN CREATE ROLE clearflow LOGIN CREATEDB; END IF;
END $$;
SELECT 'CREATE DATABASE clearflow OWNER clearflow' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'clearflow')\gexec
SQL
        echo "clearflow: PostgreSQL role and database 'clearflow' ready on 127.0.0.1:5432"
    fi
fi

report_missing
