"""worker.jobs and worker.jobwrap with plain processes (no Spark): detached start, exit code, spec file removed,
SIGTERM passed on, SIGKILL of the group, redacted log tails."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from clearflow_spec.failures import classify
from clearflow_spec.protocol import RunFiles
from clearflow_spec.spec import PipelineSpec, parse_spec
from tests.spark_jobs.engine_helpers import wait_for
from worker import jobs


def job_spec(*, kafka: dict | None = None, clickhouse: dict | None = None) -> PipelineSpec:
    """A job's spec with the given connection settings (secrets in clear, as the worker writes it)."""
    return parse_spec({
        "version": 1,
        "name": "pipeline-1",
        "source": {
            "kafka": {"bootstrap_servers": "k:9092", **(kafka or {})},
            "topics": ["t"],
            "fields": [{"path": "a", "type": "string"}],
        },
        "sink": {
            "clickhouse": {"host": "ch", **(clickhouse or {})},
            "table": "t",
            "columns": [{"field": "a", "column": "a", "type": "String"}],
        },
    })  # fmt: skip


SLEEPER = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: (print('got SIGTERM', flush=True), sys.exit(0)))\n"
    "print('password=hunter22 and the key s3cr3t-value', flush=True)\n"
    "time.sleep(600)\n"
)


def start(run_dir: Path, code: str, *, niceness: int = 0) -> jobs.JobHandle:
    """Start `code` under the supervisor the way start_job does, with a spec file beside it."""
    spec = jobs.write_spec(run_dir, job_spec(clickhouse={"password": "s3cr3t-value"}))
    launcher = subprocess.run(
        [sys.executable, "-m", "worker.jobwrap", "--run-dir", str(run_dir), "--spec", str(spec),
         "--niceness", str(niceness), "--", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=30, cwd=Path(jobs.__file__).parents[1],
    )  # fmt: skip
    assert launcher.returncode == 0, launcher.stderr
    pid = int(launcher.stdout)
    return jobs.JobHandle(
        pid, psutil.Process(pid).create_time(), jobs.this_host(), str(run_dir), str(run_dir / "job.log")
    )


def state(handle: jobs.JobHandle) -> jobs.JobState:
    return jobs.job_state(pid=handle.pid, process_started=handle.process_started, run_dir=handle.run_dir)


def test_the_job_outlives_its_launcher_and_a_stop_is_passed_to_it(tmp_path):
    handle = start(tmp_path, SLEEPER)
    spec = tmp_path / RunFiles.SPEC
    assert (spec.stat().st_mode & 0o777) == 0o600
    process = psutil.Process(handle.pid)
    assert process.ppid() != psutil.Process().pid  # not our child: nobody keeps it as a zombie
    log = Path(handle.log_path)  # opened by the supervisor after it reported its pid: may not be there yet
    wait_for(lambda: log.is_file() and "hunter22" in log.read_text(), timeout=30)
    assert state(handle).alive

    assert jobs.request_stop(pid=handle.pid, process_started=handle.process_started)
    assert jobs.wait_gone(pid=handle.pid, process_started=handle.process_started, timeout=30)
    assert state(handle) == jobs.JobState(alive=False, exit_code=0)
    assert "got SIGTERM" in Path(handle.log_path).read_text()
    assert not spec.exists()


def test_the_job_runs_at_its_niceness_and_its_supervisor_at_the_workers(tmp_path):
    """The job's processes (and what they start) yield the CPU to the web app and the services; the supervisor,
    which renews the run's lease, does not."""
    handle = start(
        tmp_path,
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']);"
        " time.sleep(600)",
        niceness=7,
    )
    try:
        wait_for(lambda: len(psutil.Process(handle.pid).children(recursive=True)) == 2, timeout=30)
        ours = psutil.Process().nice()
        assert psutil.Process(handle.pid).nice() == ours
        assert [p.nice() for p in psutil.Process(handle.pid).children(recursive=True)] == [min(19, ours + 7)] * 2
    finally:
        jobs.force_kill(pid=handle.pid, process_started=handle.process_started)


def test_a_forced_stop_kills_the_whole_group(tmp_path):
    handle = start(
        tmp_path,
        "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', "
        "'import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)']);"
        " import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)",
    )
    wait_for(lambda: len(psutil.Process(handle.pid).children(recursive=True)) == 2, timeout=30)
    members = [psutil.Process(handle.pid), *psutil.Process(handle.pid).children(recursive=True)]
    jobs.request_stop(pid=handle.pid, process_started=handle.process_started)  # ignored by the job
    assert not jobs.wait_gone(pid=handle.pid, process_started=handle.process_started, timeout=1)

    assert jobs.force_kill(pid=handle.pid, process_started=handle.process_started)
    wait_for(lambda: not any(m.is_running() and m.status() != psutil.STATUS_ZOMBIE for m in members), timeout=30)
    assert state(handle) == jobs.JobState(alive=False, exit_code=None)  # killed: no exit code written
    assert not jobs.force_kill(pid=handle.pid, process_started=handle.process_started)  # gone: nothing to kill


@pytest.mark.fast
def test_a_reused_pid_is_not_taken_for_the_job(tmp_path):
    me = psutil.Process()
    assert jobs.job_state(pid=me.pid, process_started=me.create_time() - 100, run_dir=str(tmp_path)).alive is False
    assert jobs.job_state(pid=me.pid, process_started=me.create_time(), run_dir=str(tmp_path)).alive is True


@pytest.mark.fast
def test_log_tails_and_reasons_never_show_secrets(tmp_path):
    spec = job_spec(
        kafka={
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": "PLAIN",
            "sasl_username": "svc",
            "sasl_password": "kafka-pass",
            "ssl_certificate_pem": "-----CERT-----",
            "ssl_key_pem": "-----KEY-----",
        },
        clickhouse={"password": "ch-pass-123"},
    )
    secrets = jobs.secret_values(spec)
    assert sorted(secrets) == ["-----KEY-----", "ch-pass-123", "kafka-pass"]
    log = tmp_path / "job.log"
    log.write_text("\n".join([f"line {i}" for i in range(300)] + [
        spec.to_json(reveal_secrets=True),
        "sasl.password=other-secret in a config dump",
        "2026-11-23 10:00:00,000 ERROR clearflow.run pipeline p failed: ClickHouseWriteError: Code: 53. bad type",
    ]))  # fmt: skip
    tail = jobs.log_tail(str(log), lines=5, secrets=secrets)
    assert "line 298" in tail and "line 297" not in tail
    for secret in [*secrets, "other-secret"]:
        assert secret not in tail
    assert classify(tail, 1).what == "ClickHouse refused the write: Code: 53. bad type"
    assert classify("", None).what == "The job was killed or lost (no exit code)."


@pytest.mark.fast
def test_a_standby_directory_names_its_pipeline_once_taken(tmp_path):
    from worker import standby

    waiting = standby.root(tmp_path) / "20261127T070000-abc123"
    waiting.mkdir(parents=True)
    assert standby.is_waiting(waiting) and standby.job_name_of(waiting) == "standby"
    (waiting / RunFiles.JOB_NAME).write_text("pipeline-7")
    assert not standby.is_waiting(waiting) and standby.job_name_of(waiting) == "pipeline-7"
    assert standby.job_name_of(tmp_path / "pipeline-3" / "20261127T070000-1") == "pipeline-3"
    assert not standby.is_waiting(tmp_path / "pipeline-3" / "20261127T070000-1")


def launch(tmp_path: Path, driver_memory: str, master: str = "local[2]") -> jobs.JobLaunch:
    return jobs.JobLaunch(
        name="pipeline-1", run_dir=tmp_path / "run", checkpoint=str(tmp_path / "cp"), master=master,
        spec=job_spec(), driver_memory=driver_memory,
    )  # fmt: skip


@pytest.mark.fast
def test_a_light_job_starts_its_jvm_lean_and_a_heavy_one_with_the_jvms_defaults(tmp_path):
    light = jobs.job_command(launch(tmp_path, "512m"), tmp_path / "spec.json")
    [options] = [arg for arg in light if arg.startswith("--driver-java-options=")]
    assert "-XX:+UseSerialGC" in options  # what an operator sees on the job's command line (and the JVM's)
    heavy = jobs.job_command(launch(tmp_path, "1g"), tmp_path / "spec.json")
    assert not [arg for arg in heavy if "driver-java-options" in arg or "UseSerialGC" in arg]
    # The runner reads them back as one value (it starts with '-', so it must not read as an option).
    from spark_jobs.run import parse_args

    runner = light[light.index("spark_jobs.run") + 1 :]
    assert parse_args(runner).driver_java_options == options.partition("=")[2]


@pytest.mark.fast
def test_a_light_pipelines_job_is_told_to_yield_the_cpu_after_its_first_batch(tmp_path):
    from spark_jobs.run import parse_args

    def runner_args(launch: jobs.JobLaunch):
        command = jobs.job_command(launch, tmp_path / "spec.json")
        return parse_args(command[command.index("spark_jobs.run") + 1 :])

    assert runner_args(
        dataclasses.replace(launch(tmp_path, "512m"), idle_after_first_batch=True)
    ).idle_after_first_batch
    assert not runner_args(launch(tmp_path, "512m")).idle_after_first_batch


@pytest.mark.fast
def test_a_light_job_on_a_cluster_gives_its_lean_options_to_spark_submit(tmp_path):
    command = jobs.job_command(launch(tmp_path, "512m", "spark://h:7077"), tmp_path / "spec.json")
    [driver] = [arg for arg in command if arg.startswith("spark.driver.extraJavaOptions=")]
    assert driver.startswith("spark.driver.extraJavaOptions=-Xss32m ") and "-XX:+UseSerialGC" in driver
    heavy = jobs.job_command(launch(tmp_path, "1g", "spark://h:7077"), tmp_path / "spec.json")
    assert "spark.driver.extraJavaOptions=-Xss32m" in heavy
