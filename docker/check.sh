#!/usr/bin/env bash
# Builds the app image (Dockerfile) and the Spark image (docker/spark.Dockerfile) with podman on a base made from
# Debian's packages (no image registry needed: the official Python base is replaced through PYTHON_IMAGE), runs
# them (web, worker, beat, a Spark master and worker) against Kafka, ClickHouse, Redis and PostgreSQL from the
# local stack, deploys one pipeline through the API and checks that ClickHouse holds each key exactly once.
# Exits 0 only then. Removes every container, service and directory it made, also on failure or Ctrl-C.
#
#   docker/check.sh            (as root, or where podman runs containers; see docs/deployment.md)
#
# Everything heavy runs at the lowest CPU priority (nice 19): the machine may be measuring something else.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
# The tag changes with what the base holds (an image made before lacks what is added since).
BASE_IMAGE=localhost/clearflow-python:3.11-bookworm-2
APP_IMAGE=localhost/clearflow/app:check
SPARK_IMAGE=localhost/clearflow/spark:check
RUN_ID=clearflow-check-$$
WORK=$(mktemp -d /tmp/clearflow-check.XXXXXX)
APP_UID=10001 # the images' user (Dockerfile, docker/spark.Dockerfile)
# runc: crun refuses hybrid cgroups; ulimits no higher than the host's (raising them is refused in containers).
PODMAN_RUN=(nice -n 19 podman run --runtime runc --network host
  --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --label "$RUN_ID")
SERVICES_PID=""
STARTED=$(date +%s)
STEP_STARTED=$STARTED

say() { echo "check: $*"; }
step() {
  local now
  now=$(date +%s)
  [[ -n ${STEP_NAME:-} ]] && say "$(printf '%s: done in %.1f min' "$STEP_NAME" "$(echo "($now - $STEP_STARTED) / 60" | bc -l)")"
  STEP_NAME=$1 STEP_STARTED=$now
  say "$1 ..."
}

logs_on_failure() {
  say "last lines of each container's log:"
  for name in $(podman ps -a --filter "label=$RUN_ID" --format '{{.Names}}'); do
    echo "----- $name"
    podman logs --tail 25 "$name" 2>&1 || true
  done
  for log in "$WORK"/var/runs/*/*.log "$WORK"/services/logs/*.log; do
    [[ -f $log ]] && { echo "----- $log"; tail -n 25 "$log"; }
  done
  true
}

cleanup() {
  local code=$?
  trap - EXIT INT TERM
  if ((code != 0)); then
    logs_on_failure
  fi
  say "removing what the check made"
  local containers
  containers=$(podman ps -aq --filter "label=$RUN_ID" || true)
  [[ -n $containers ]] && podman rm -f -t 10 $containers >/dev/null
  if [[ -n $SERVICES_PID ]] && kill -0 "$SERVICES_PID" 2>/dev/null; then
    kill -TERM "$SERVICES_PID" && wait "$SERVICES_PID" || true
  fi
  rm -rf "$WORK"
  local minutes
  minutes=$(printf '%.1f' "$(echo "($(date +%s) - $STARTED) / 60" | bc -l)")
  if ((code == 0)); then
    say "PASSED in $minutes min: the images run a pipeline and ClickHouse holds exactly the events sent"
  else
    say "FAILED (exit $code) after $minutes min at step: ${STEP_NAME:-start}"
  fi
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "1. the base image ($BASE_IMAGE: Debian bookworm's Python 3.11, made once)"
if podman image exists "$BASE_IMAGE"; then
  say "already made"
else
  # Python's headers as in the official image (packages built from source, gssapi, need them). The host's own
  # added CAs go in too: a TLS-inspecting proxy on the way to PyPI and Maven Central.
  nice -n 19 mmdebstrap --variant=minbase \
    --include=ca-certificates,passwd,netbase,tzdata,python3,python3-venv,python3-dev \
    --customize-hook='if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
        cp /usr/local/share/ca-certificates/*.crt "$1/usr/local/share/ca-certificates/"
        chroot "$1" update-ca-certificates; fi' \
    --customize-hook='chroot "$1" python3 -m venv /usr/local/python' \
    bookworm "$WORK/rootfs.tar"
  # `python` and `pip` first on PATH, as in the official python image.
  nice -n 19 podman import \
    --change 'ENV PATH=/usr/local/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' "$WORK/rootfs.tar" "$BASE_IMAGE" >/dev/null
  rm -f "$WORK/rootfs.tar"
fi

BUILD=(nice -n 19 podman build --runtime runc --network host --ulimit nofile=1024:1024 --ulimit nproc=1024:1024
  --build-arg "PYTHON_IMAGE=$BASE_IMAGE")
step "2. the app image ($APP_IMAGE from Dockerfile)"
"${BUILD[@]}" -t "$APP_IMAGE" -f "$REPO/Dockerfile" "$REPO" >"$WORK/build-app.log" 2>&1 ||
  { tail -n 40 "$WORK/build-app.log"; say "the app image did not build"; exit 1; }

step "3. the Spark image ($SPARK_IMAGE from docker/spark.Dockerfile)"
"${BUILD[@]}" -t "$SPARK_IMAGE" -f "$REPO/docker/spark.Dockerfile" "$REPO" >"$WORK/build-spark.log" 2>&1 ||
  { tail -n 40 "$WORK/build-spark.log"; say "the Spark image did not build"; exit 1; }

step "4. Kafka, ClickHouse, Redis and PostgreSQL from the local stack"
mkdir -p "$WORK/services"
nice -n 19 "$PYTHON" "$REPO/docker/check_stack.py" services "$WORK/services" >"$WORK/services.log" 2>&1 &
SERVICES_PID=$!
for _ in $(seq 240); do
  [[ -f $WORK/services/ports.json ]] && break
  kill -0 "$SERVICES_PID" 2>/dev/null || { cat "$WORK/services.log"; say "the services did not start"; exit 1; }
  sleep 0.5
done
[[ -f $WORK/services/ports.json ]] || { cat "$WORK/services.log"; say "the services took over 2 min"; exit 1; }
port() { "$PYTHON" -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$WORK/services/ports.json" "$1"; }
WEB_PORT=$(port web) SPARK_PORT=$(port spark)

step "5. the containers: migrate, web, worker, beat, Spark master and worker"
mkdir -p "$WORK/var" "$WORK/checkpoints"
chown "$APP_UID" "$WORK/var" "$WORK/checkpoints"
APP=("${PODMAN_RUN[@]}" --env-file "$WORK/services/app.env" -v "$WORK/var:/var/lib/clearflow"
  -v "$WORK/checkpoints:/var/lib/clearflow-checkpoints")
"${APP[@]}" --name "$RUN_ID-migrate" "$APP_IMAGE" python manage.py migrate --noinput >"$WORK/migrate.log" 2>&1 ||
  { tail -n 30 "$WORK/migrate.log"; say "the migrations failed"; exit 1; }
"${PODMAN_RUN[@]}" -d --name "$RUN_ID-spark-master" "$SPARK_IMAGE" spark-class org.apache.spark.deploy.master.Master \
  --host 127.0.0.1 --port "$SPARK_PORT" --webui-port "$(port spark_ui)" >/dev/null
"${PODMAN_RUN[@]}" -d --name "$RUN_ID-spark-worker" -v "$WORK/checkpoints:/var/lib/clearflow-checkpoints" \
  -e SPARK_WORKER_CORES=2 -e SPARK_WORKER_MEMORY=2g "$SPARK_IMAGE" spark-class org.apache.spark.deploy.worker.Worker \
  --host 127.0.0.1 --webui-port "$(port spark_worker_ui)" "spark://127.0.0.1:$SPARK_PORT" >/dev/null
"${APP[@]}" -d --name "$RUN_ID-web" "$APP_IMAGE" gunicorn webapp.config.wsgi:application \
  --bind "127.0.0.1:$WEB_PORT" --workers 2 --threads 4 >/dev/null
"${APP[@]}" -d --name "$RUN_ID-worker" "$APP_IMAGE" celery -A worker.celery worker --loglevel INFO \
  --concurrency 2 -Q pipelines,celery >/dev/null
"${APP[@]}" -d --name "$RUN_ID-beat" "$APP_IMAGE" celery -A worker.celery beat --loglevel INFO \
  --schedule /var/lib/clearflow/celerybeat-schedule >/dev/null
for _ in $(seq 120); do
  curl -s -o /dev/null "http://127.0.0.1:$WEB_PORT/api/v1/health" && break
  sleep 1
done
curl -s -o /dev/null "http://127.0.0.1:$WEB_PORT/api/v1/health" || { say "the web app does not answer on :$WEB_PORT"; exit 1; }
# The Spark worker is up once the master lists it (its UI's JSON): a worker that exits at start is seen here.
for _ in $(seq 90); do
  curl -s "http://127.0.0.1:$(port spark_ui)/json/" | grep -q '"aliveworkers" *: *[1-9]' && break
  sleep 1
done
curl -s "http://127.0.0.1:$(port spark_ui)/json/" | grep -q '"aliveworkers" *: *[1-9]' ||
  { say "no Spark worker registered with the master"; exit 1; }
for name in spark-master spark-worker web worker beat; do
  [[ $(podman inspect -f '{{.State.Running}}' "$RUN_ID-$name") == true ]] || { say "$name stopped"; exit 1; }
done

step "6. a user and an API token (manage.py in the web container)"
podman exec "$RUN_ID-web" python manage.py ensure_admin >/dev/null
touch "$WORK/token" && chmod 600 "$WORK/token"
podman exec "$RUN_ID-web" python manage.py create_api_token admin --name check >"$WORK/token"

step "7. one pipeline through the API: events and duplicates in, exact rows in ClickHouse"
nice -n 19 "$PYTHON" "$REPO/docker/check_stack.py" pipeline "$WORK/services" "$WORK/token"

step "done"
