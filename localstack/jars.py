"""Java artifacts from Maven Central, resolved once by `make install` into the Python environment.

Bundles of pinned Maven coordinates, each resolved with its runtime dependencies:
- `kafka-broker`: Apache Kafka's broker (KRaft), run with `java` directly by `localstack.service_defs`;
- `spark-kafka`: Spark's own Kafka connector and Avro functions (`from_avro`) for the engine, at the pinned
  pyspark's version. Jars the pyspark wheel already ships (Scala, Hadoop client, Avro, compression codecs) are
  left out, so Spark never sees two copies.
- `msk-iam`: AWS's `aws-msk-iam-auth` (the AWS_MSK_IAM login module) and the AWS SDK it signs with, for the job's
  class path beside the connector's kafka-clients (left out here, as pyspark's jars are);
- `hadoop-aws`: Hadoop's S3A file system at the version of the Hadoop client in the pyspark wheel, with the AWS
  SDK bundle it depends on, for checkpoints on object storage (`spark_jobs.object_store`);
- `s3proxy`: S3Proxy, an S3-compatible server on a filesystem backend, run by `localstack.service_defs`.

Built from this repository:
- `schema-registry`: Apicurio Registry, a Confluent-compatible schema registry, packaged by Quarkus from its
  Maven Central artifacts (`localstack/schema-registry/pom.xml`); `registry_runner()` is its jar.
- `protobuf-decoder`: the engine's Protobuf decoder (`spark_jobs/protobuf-jvm/pom.xml`), its jar and its runtime
  dependencies side by side, without the jars pyspark already ships.
- `clearflow-engine`: the engine's own Java code (`spark_jobs/jvm`, the dedup StatefulProcessor), compiled with
  `javac` against the jars of the pinned pyspark wheel (no Maven, no Scala compiler) into one jar.

They land in `<sys.prefix>/share/clearflow/jars/<bundle>/` (the venv, or the image's Python), next to the
packages they belong with, so a job never downloads anything at start. `python -m localstack jars` resolves
what is missing (Maven's own cache, ~/.m2, makes a second machine-wide resolve cheap).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

# The one definition of where bundles live (the engine finds its connector there without importing localstack).
from spark_jobs.jars import (
    CONNECTOR_BUNDLE,
    ENGINE_BUNDLE,
    MSK_IAM_BUNDLE,
    OBJECT_STORE_BUNDLE,
    PROTOBUF_BUNDLE,
    jars_root,
)

KAFKA_VERSION = "4.1.1"
SPARK_VERSION = "4.2.0"  # must equal the pinned pyspark's version (pyproject.toml); tests check it
HADOOP_VERSION = "3.5.0"  # the Hadoop client inside the pinned pyspark wheel (hadoop-client-api-*.jar); tests check it
S3PROXY_VERSION = "2.6.0"
S3PROXY_BUNDLE = "s3proxy"

BUNDLES: dict[str, tuple[str, ...]] = {
    "kafka-broker": (
        f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
        f"org.apache.kafka:kafka-server:{KAFKA_VERSION}",
        # Kafka's own SLF4J binding is log4j2; the 2.x API the binding needs.
        "org.slf4j:slf4j-api:2.0.17",
        "org.apache.logging.log4j:log4j-slf4j2-impl:2.24.3",
    ),
    CONNECTOR_BUNDLE: (
        f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_VERSION}",
        f"org.apache.spark:spark-avro_2.13:{SPARK_VERSION}",
    ),
    MSK_IAM_BUNDLE: ("software.amazon.msk:aws-msk-iam-auth:2.3.2",),
    # Hadoop's S3A file system and the AWS SDK it was built with: checkpoints on object storage (s3a://).
    OBJECT_STORE_BUNDLE: (f"org.apache.hadoop:hadoop-aws:{HADOOP_VERSION}",),
    # An S3-compatible server on a filesystem backend, for the local stack and the tests.
    S3PROXY_BUNDLE: (f"org.gaul:s3proxy:{S3PROXY_VERSION}",),
}
# Bundles for Spark's class path: without the jars pyspark ships (one copy of each), nor a second kafka-clients.
BESIDE_PYSPARK = {CONNECTOR_BUNDLE, MSK_IAM_BUNDLE, OBJECT_STORE_BUNDLE}
# Applications built from a Maven project here: bundle name -> project directory.
REGISTRY_BUNDLE = "schema-registry"
BUILDS: dict[str, Path] = {REGISTRY_BUNDLE: Path(__file__).resolve().parent / "schema-registry"}
BUILDS[PROTOBUF_BUNDLE] = Path(__file__).resolve().parent.parent / "spark_jobs" / "protobuf-jvm"
PROTOBUF_JAR = "clearflow-protobuf.jar"  # the project's <finalName>
BUILDS[ENGINE_BUNDLE] = Path(__file__).resolve().parent.parent / "spark_jobs" / "jvm"  # javac, not Maven
ENGINE_JAR = "clearflow-engine.jar"
REGISTRY_RUNNER = "schema-registry-1-runner.jar"  # Quarkus's runner jar; its manifest names lib/*.jar
STAMP = ".resolved"


class JarsError(RuntimeError):
    """A bundle is missing or could not be resolved; the message says what to run."""


def bundle_dir(name: str) -> Path:
    return jars_root() / name


def _project_files(name: str) -> list[Path]:
    return sorted(path for path in BUILDS[name].rglob("*") if path.is_file() and "target" not in path.parts)


def _fingerprint(name: str) -> str:
    digest = hashlib.sha256()
    if name in BUILDS:
        for path in _project_files(name):
            digest.update(str(path.relative_to(BUILDS[name])).encode() + b"\0" + path.read_bytes() + b"\0")
        if name == ENGINE_BUNDLE:
            digest.update(SPARK_VERSION.encode())  # compiled against this Spark's jars
    else:
        digest.update("\n".join(BUNDLES[name]).encode())
    return digest.hexdigest()[:16]


def is_resolved(name: str) -> bool:
    stamp = bundle_dir(name) / STAMP
    return stamp.is_file() and stamp.read_text().strip() == _fingerprint(name)


def bundle_jars(name: str) -> list[Path]:
    """The bundle's jar files; JarsError (naming the command to run) when it was never resolved."""
    if not is_resolved(name):
        raise JarsError(f"the Java bundle {name!r} is not installed: run `make install` (python -m localstack jars)")
    return sorted(bundle_dir(name).glob("*.jar"))


def classpath(name: str) -> str:
    return os.pathsep.join(str(path) for path in bundle_jars(name))


def registry_runner() -> Path:
    """The schema registry's runner jar (`java -jar` it); JarsError when it was never built."""
    if not is_resolved(REGISTRY_BUNDLE):
        raise JarsError(
            f"the schema registry ({REGISTRY_BUNDLE!r}) is not built: run `make install` (python -m localstack jars)"
        )
    return bundle_dir(REGISTRY_BUNDLE) / REGISTRY_RUNNER


def _pom(name: str) -> str:
    dependencies = []
    for coordinates in BUNDLES[name]:
        group, artifact, version = coordinates.split(":")
        dependencies.append(
            f"<dependency><groupId>{escape(group)}</groupId><artifactId>{escape(artifact)}</artifactId>"
            f"<version>{escape(version)}</version></dependency>"
        )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>io.clearflow.bundle</groupId><artifactId>{escape(name)}</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{''.join(dependencies)}</dependencies></project>"
    )


def _pyspark_jar_names() -> set[str]:
    """Artifact names (file name without version) of the jars the installed pyspark wheel ships."""
    import pyspark

    return {_artifact_name(path.name) for path in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}


def _artifact_name(file_name: str) -> str:
    """`kafka-clients-3.9.2.jar` -> `kafka-clients`: the part before the first dash followed by a digit."""
    stem = file_name.removesuffix(".jar")
    parts = stem.split("-")
    for index, part in enumerate(parts[1:], start=1):
        if part[:1].isdigit():
            return "-".join(parts[:index])
    return stem


def _run_maven(name: str, args: list[str]) -> None:
    result = subprocess.run(["mvn", "-q", "-B", *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
        what = BUILDS[name] if name in BUILDS else ", ".join(BUNDLES[name])
        raise JarsError(f"Maven could not resolve {name} ({what}):\n{tail}")


def _install(name: str, out_dir: Path) -> Path:
    """Stamp `out_dir` and put it in the bundle's place (a half-done resolve leaves nothing behind)."""
    target = bundle_dir(name)
    (out_dir / STAMP).write_text(_fingerprint(name) + "\n")
    if target.exists():
        shutil.rmtree(target)
    out_dir.rename(target)
    return target


def build_engine() -> Path:
    """Compile `spark_jobs/jvm` against pyspark's own jars (the exact Spark the job runs) into one jar."""
    import pyspark

    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise JarsError("a Java 17 JDK (javac, jar) is not installed: apt-get install -y openjdk-17-jdk-headless")
    spark_jars = Path(pyspark.__file__).parent / "jars"
    sources = [str(path) for path in _project_files(ENGINE_BUNDLE) if path.suffix == ".java"]
    target = bundle_dir(ENGINE_BUNDLE)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{ENGINE_BUNDLE}-") as work:
        classes, out_dir = Path(work) / "classes", Path(work) / "bundle"
        out_dir.mkdir()
        for command in (
            [javac, "--release", "17", "-Xlint:all,-path", "-cp", f"{spark_jars}/*", "-d", str(classes), *sources],
            [jar, "--create", "--file", str(out_dir / ENGINE_JAR), "-C", str(classes), "."],
        ):
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
                raise JarsError(f"could not build {ENGINE_BUNDLE} ({BUILDS[ENGINE_BUNDLE]}):\n{tail}")
        return _install(ENGINE_BUNDLE, out_dir)


def build(name: str) -> Path:
    """Build one application bundle from its Maven project (copied, so the repository gets no target/)."""
    if name == ENGINE_BUNDLE:
        return build_engine()
    if shutil.which("mvn") is None:
        raise JarsError("Maven (mvn) is not installed: apt-get install -y maven")
    target = bundle_dir(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{name}-") as work:
        project = Path(work) / "project"
        shutil.copytree(BUILDS[name], project, ignore=shutil.ignore_patterns("target"))
        _run_maven(name, ["-f", str(project / "pom.xml"), "package", "-DskipTests"])
        out_dir = Path(work) / "bundle"
        out_dir.mkdir()
        _collect_build(name, project / "target", out_dir)
        return _install(name, out_dir)


def _collect_build(name: str, built: Path, out_dir: Path) -> None:
    """Move what a build's bundle holds out of its Maven `target/` into `out_dir`."""
    if name == REGISTRY_BUNDLE:  # the runner jar names its lib/*.jar in its manifest: keep the layout
        shutil.move(built / "lib", out_dir / "lib")
        shutil.move(built / REGISTRY_RUNNER, out_dir / REGISTRY_RUNNER)
        return
    # A jar for Spark's classpath: its runtime dependencies beside it, minus those pyspark ships (one copy each).
    shipped = _pyspark_jar_names()
    shutil.move(built / name_jar(name), out_dir / name_jar(name))
    for jar in (built / "lib").glob("*.jar"):
        if _artifact_name(jar.name) not in shipped:
            shutil.move(jar, out_dir / jar.name)


def name_jar(name: str) -> str:
    """The jar a library build makes (its pom's <finalName>)."""
    if name == PROTOBUF_BUNDLE:
        return PROTOBUF_JAR
    raise JarsError(f"{name} builds no library jar")


def resolve(name: str) -> Path:
    """Resolve one bundle with Maven into its directory (atomically: a half-done resolve leaves nothing)."""
    if name in BUILDS:
        return build(name)
    if shutil.which("mvn") is None:
        raise JarsError("Maven (mvn) is not installed: apt-get install -y maven")
    target = bundle_dir(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{name}-") as work:
        work_dir = Path(work)
        (work_dir / "pom.xml").write_text(_pom(name))
        out_dir = work_dir / "jars"
        _run_maven(
            name,
            [
                "-f",
                str(work_dir / "pom.xml"),
                "dependency:copy-dependencies",
                f"-DoutputDirectory={out_dir}",
                "-DincludeScope=runtime",
            ],
        )
        if name in BESIDE_PYSPARK:
            left_out = _pyspark_jar_names()
            if name == MSK_IAM_BUNDLE:
                # The connector's kafka-clients is the one; pyspark's jcl-over-slf4j already has commons-logging's API.
                left_out |= {"kafka-clients", "commons-logging"}
            for jar in out_dir.glob("*.jar"):
                if _artifact_name(jar.name) in left_out:
                    jar.unlink()
        return _install(name, out_dir)


def ensure_all() -> list[str]:
    """Resolve every bundle that is missing or out of date; returns the names resolved now."""
    done = []
    for name in [*BUNDLES, *BUILDS]:
        if not is_resolved(name):
            resolve(name)
            done.append(name)
    return done


def main() -> int:
    try:
        done = ensure_all()
    except JarsError as error:
        print(f"clearflow: {error}", file=sys.stderr)
        return 1
    for name in done:
        print(f"clearflow: resolved {name} into {bundle_dir(name)}")
    return 0
