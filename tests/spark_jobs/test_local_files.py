"""The checkpoint's local file system (spark_jobs.pipeline.IN_PROCESS_LOCAL_FILES): Hadoop's file operations on
`file:` without a `chmod` or `readlink` process each, and with Hadoop's results (modes, statuses, renames)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from spark_jobs.session import use_in_process_local_files

pytestmark = pytest.mark.spark


def file_context(spark: Any) -> Any:
    """A FileContext on `file:` with the session's Hadoop settings, as a query's checkpoint file manager has."""
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    return jvm.org.apache.hadoop.fs.FileContext.getFileContext(jvm.java.net.URI("file:///"), conf)


def test_a_querys_checkpoint_files_are_written_and_renamed_in_process_as_hadoop_would(spark, tmp_path):
    assert use_in_process_local_files(spark)  # the tests' session carries the engine's jar, as a job's does
    jvm = spark._jvm
    context = file_context(spark)
    assert context.getDefaultFileSystem().getClass().getName() == "io.clearflow.spark.InProcessLocalFileSystem$Fs"

    # What the offset log does for each batch: create a temporary file, then rename it over the final name.
    temporary, final = tmp_path / ".1.tmp", tmp_path / "1"
    hadoop, gateway = jvm.org.apache.hadoop.fs, spark.sparkContext._gateway
    path = hadoop.Path
    create = jvm.java.util.EnumSet.of(hadoop.CreateFlag.CREATE)
    stream = context.create(
        path(f"file://{temporary}"), create, gateway.new_array(getattr(hadoop, "Options$CreateOpts"), 0)
    )
    stream.write(bytearray(b"v1\n{}"))
    stream.close()
    overwrite = gateway.new_array(getattr(hadoop, "Options$Rename"), 1)
    overwrite[0] = getattr(hadoop, "Options$Rename").OVERWRITE
    context.rename(path(f"file://{temporary}"), path(f"file://{final}"), overwrite)

    assert final.read_bytes() == b"v1\n{}" and not temporary.exists()
    # Hadoop's default file mode less the umask, set with one system call instead of a chmod process.
    assert stat.S_IMODE(os.stat(final).st_mode) == 0o644
    # Its checksum file moved with it, as Hadoop's ChecksumFs does.
    assert (tmp_path / ".1.crc").exists() and not (tmp_path / "..1.tmp.crc").exists()

    status = context.getFileLinkStatus(path(f"file://{final}"))
    assert status.getLen() == 5 and not status.isSymlink()


def test_a_missing_file_is_reported_as_missing(spark, tmp_path):
    use_in_process_local_files(spark)
    jvm = spark._jvm
    missing = jvm.org.apache.hadoop.fs.Path(f"file://{tmp_path}/absent")
    with pytest.raises(Exception, match="FileNotFoundException"):
        file_context(spark).getFileLinkStatus(missing)
    with pytest.raises(Exception, match="FileNotFoundException"):
        getattr(jvm.io.clearflow.spark, "InProcessLocalFileSystem$Raw")().setPermission(
            missing, jvm.org.apache.hadoop.fs.permission.FsPermission.createImmutable(0o600)
        )


def test_state_files_go_into_the_checkpoint_as_hard_links_where_the_disk_allows(spark, tmp_path):
    assert use_in_process_local_files(spark)
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path
    conf = spark._jsparkSession.sessionState().newHadoopConf()  # what a query's state stores get
    fs = path("file:///").getFileSystem(conf)
    assert fs.getClass().getName() == "io.clearflow.spark.InProcessLocalFileSystem$Linking"

    # What the state store's maintenance thread does with each new SST file of a snapshot.
    sst = tmp_path / "rocksdb" / "000042.sst"
    sst.parent.mkdir()
    sst.write_bytes(b"sst" * 1000)
    uploaded = tmp_path / "checkpoint" / "state" / "0" / "0" / "000042-uuid.sst"
    fs.copyFromLocalFile(path(sst.as_uri()), path(uploaded.as_uri()))
    assert uploaded.read_bytes() == sst.read_bytes()
    assert os.stat(uploaded).st_ino == os.stat(sst).st_ino  # one file on disk, not two
    sst.unlink()  # RocksDB deletes its copy after a compaction: the checkpoint's stays whole
    assert uploaded.read_bytes() == b"sst" * 1000

    # Onto another file system a link cannot go: copied, as Hadoop does.
    other = Path("/dev/shm")
    if other.is_dir() and os.stat(other).st_dev != os.stat(tmp_path).st_dev:
        source = tmp_path / "000043.sst"
        source.write_bytes(b"x" * 100)
        target = other / f"clearflow-test-{os.getpid()}" / "000043.sst"
        try:
            fs.copyFromLocalFile(path(source.as_uri()), path(target.as_uri()))
            assert target.read_bytes() == b"x" * 100  # a copy (another device), not an error
        finally:
            shutil.rmtree(target.parent, ignore_errors=True)
