// lib/core/atomic_file.h
// Crash-safe file writes: data goes to a temporary name, is fsync'ed, then renamed over the
// target and the directory fsync'ed, so a reader (or a run after kill -9) sees the old file or
// the new one, never a partial one.
#pragma once

#include <string>

namespace masr {

// Writes `bytes` to `path` atomically; throws an I/O error naming the path and errno's reason.
void write_file_atomically(const std::string& path, const std::string& bytes);

// Writes `bytes` to `path` and fsyncs it (not atomic: for files inside a directory that is
// renamed into place afterwards).
void write_file_synced(const std::string& path, const std::string& bytes);

// fsyncs a directory, so that renames and creations inside it are durable.
void sync_directory(const std::string& path);

// Fault injection for tests of a full disk (docs/reliability.md): after `bytes` more bytes, every
// write_file_synced/write_file_atomically fails with ENOSPC, as write(2) does on a full disk;
// a negative value turns it off. The environment variable MASR_FAULT_DISK_FULL_AFTER_BYTES sets
// the same budget for a whole process (the CLI tests use it), read at the first write.
void set_disk_full_after_bytes(long long bytes);

// The whole file; throws an I/O error naming the path.
std::string read_file(const std::string& path);

}  // namespace masr
