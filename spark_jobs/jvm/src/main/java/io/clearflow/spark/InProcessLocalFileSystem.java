package io.clearflow.spark;

import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.PosixFilePermissions;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.DelegateToFileSystem;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FsConstants;
import org.apache.hadoop.fs.FsServerDefaults;
import org.apache.hadoop.fs.LocalFileSystem;
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
 *
 * <p>The FileSystem API ({@code fs.file.impl}) gets {@link Linking}: the state store's maintenance thread uploads
 * each new SST file of a RocksDB snapshot into the checkpoint with {@code copyFromLocalFile}. On one machine that
 * copied every file a compaction wrote: at 20,000 events/s with a 1-hour window the job's JVM wrote 110 MB/s
 * (compactions and these copies), its maintenance thread took 0.09 cores, and the page cache held the 15 GB state
 * twice (docs/performance.md). An SST file never changes once written, so a hard link is the same file.
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

    /**
     * Hadoop's LocalFileSystem (checksums over {@link Raw}) whose {@code copyFromLocalFile} makes a hard link when
     * the source is a local file on the same file system as the destination, and copies as Hadoop does otherwise
     * (another device, a directory). The link has no checksum file: a file read without one is read unchecked,
     * as Hadoop reads any file it did not write.
     */
    public static class Linking extends LocalFileSystem {
        public Linking() {
            super(new Raw());
        }

        @Override
        public void copyFromLocalFile(boolean delSrc, Path src, Path dst) throws IOException {
            copyFromLocalFile(delSrc, true, src, dst); // LocalFileSystem's own copies without the 4-argument form
        }

        @Override
        public void copyFromLocalFile(boolean delSrc, boolean overwrite, Path src, Path dst) throws IOException {
            java.nio.file.Path source = pathToFile(src).toPath();
            java.nio.file.Path target = pathToFile(dst).toPath();
            if (Files.isRegularFile(source, LinkOption.NOFOLLOW_LINKS)) {
                try {
                    Files.createDirectories(target.getParent());
                    if (overwrite) {
                        Files.deleteIfExists(target);
                        Files.deleteIfExists(pathToFile(getChecksumFile(dst)).toPath()); // the old file's, if any
                    }
                    Files.createLink(target, source);
                    if (delSrc) {
                        Files.delete(source);
                    }
                    return;
                } catch (FileAlreadyExistsException e) {
                    throw new IOException("Target " + dst + " already exists", e);
                } catch (UnsupportedOperationException | FileSystemException e) {
                    // Another device, or links not allowed there: Hadoop's copy below.
                }
            }
            super.copyFromLocalFile(delSrc, overwrite, src, dst);
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
