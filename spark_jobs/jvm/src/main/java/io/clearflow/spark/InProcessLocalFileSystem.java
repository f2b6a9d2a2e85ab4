package io.clearflow.spark;

import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.PosixFilePermissions;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.local.LocalConfigKeys;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system ({@code file:}) for the FileContext API without a process started per file
 * operation: the checkpoint file manager writes the offset and commit logs and the state's changelogs through it.
 *
 * <p>Why: without Hadoop's native library (pyspark ships none), {@link RawLocalFileSystem} runs {@code chmod}
 * in a new process for each file it creates, and {@code readlink} for each rename through the FileContext API.
 * A 75-minute soak at 20,000 events/s started 362 processes a minute from the job's JVM, half of them on a
 * micro-batch's own path: the stream thread writing the offset and commit logs, the tasks committing their
 * changelogs. Here chmod is one system call ({@code Files.setPosixFilePermissions}), and a rename's link check an
 * {@code lstat}. Behaviour is otherwise Hadoop's: the readlink Hadoop starts is given the path with its
 * {@code file:} scheme, fails, and it then answers the file's own status, as this does.
 *
 * <p>{@code fs.AbstractFileSystem.file.impl} names {@link Fs} (spark_jobs.pipeline.use_in_process_local_files).
 * The FileSystem API ({@code fs.file.impl}: the maintenance thread's uploads of SST files, off the batch's path)
 * keeps Hadoop's own class, which spark-submit loads before the engine's jar is on the classpath.
 */
public final class InProcessLocalFileSystem {
    private InProcessLocalFileSystem() {}

    /** The raw (checksum-less) local file system, with chmod and the link check in this process. */
    public static class Raw extends RawLocalFileSystem {
        @Override
        public void setPermission(Path p, FsPermission permission) throws IOException {
            String symbols = permission.getUserAction().SYMBOL
                    + permission.getGroupAction().SYMBOL
                    + permission.getOtherAction().SYMBOL;
            try {
                Files.setPosixFilePermissions(pathToFile(p).toPath(), PosixFilePermissions.fromString(symbols));
            } catch (NoSuchFileException e) {
                throw new FileNotFoundException("File " + p + " does not exist");
            }
        }

        @Override
        public FileStatus getFileLinkStatus(Path f) throws IOException {
            File file = pathToFile(f);
            if (Files.isSymbolicLink(file.toPath())) {
                return super.getFileLinkStatus(f); // a real link (none in a checkpoint): Hadoop's own way
            }
            return getFileStatus(f);
        }
    }

    /** The FileContext API's local file system: checksums over {@link RawFs}, as Hadoop's LocalFs. */
    public static class Fs extends ChecksumFs {
        public Fs(URI uri, Configuration conf) throws IOException, URISyntaxException {
            super(new RawFs(uri, conf));
        }
    }

    /** The FileContext API over {@link Raw}, as Hadoop's RawLocalFs. */
    static class RawFs extends DelegateToFileSystem {
        RawFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
            super(uri, new Raw(), conf, FsConstants.LOCAL_FS_URI.getScheme(), false);
        }

        @Override
        public FsServerDefaults getServerDefaults(Path f) throws IOException {
            return LocalConfigKeys.getServerDefaults();
        }

        @Override
        @Deprecated
        public FsServerDefaults getServerDefaults() throws IOException {
            return LocalConfigKeys.getServerDefaults();
        }

        @Override
        public boolean isValidName(String src) {
            return true; // any name is valid on the local file system (Hadoop's RawLocalFs)
        }
    }
}
