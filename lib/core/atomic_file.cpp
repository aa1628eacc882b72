// lib/core/atomic_file.cpp
// POSIX implementation of the crash-safe writes (open/write/fsync/rename).
#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace masr {
namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path) {
  throw_io_error(what + " '" + path + "': " + std::strerror(errno));
}

// Bytes that may still be written before the injected "disk full"; -1: no fault injected.
std::atomic<long long>& disk_budget() {
  static std::atomic<long long> budget = [] {
    const char* env = std::getenv("MASR_FAULT_DISK_FULL_AFTER_BYTES");
    return env != nullptr && *env != '\0' ? std::atoll(env) : -1LL;
  }();
  return budget;
}

// write(2), or a short write and ENOSPC once the injected budget is spent.
ssize_t write_some(int fd, const char* data, size_t size) {
  std::atomic<long long>& budget = disk_budget();
  long long left = budget.load();
  if (left < 0) return ::write(fd, data, size);
  if (left == 0) {
    errno = ENOSPC;
    return -1;
  }
  const size_t allowed = std::min<size_t>(size, static_cast<size_t>(left));
  const ssize_t n = ::write(fd, data, allowed);
  if (n > 0) budget.fetch_sub(n);
  return n;
}

}  // namespace

void set_disk_full_after_bytes(long long bytes) { disk_budget().store(bytes < 0 ? -1 : bytes); }

void write_file_synced(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail("cannot create", path);
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = write_some(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = errno;
      ::close(fd);
      errno = saved;
      fail("cannot write", path);
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    fail("cannot fsync", path);
  }
  if (::close(fd) != 0) fail("cannot close", path);
}

void sync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail("cannot open directory", path);
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) fail("cannot fsync directory", path);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  const std::string temp =
      (dir / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()))).string();
  try {
    write_file_synced(temp, bytes);
  } catch (const Error& e) {
    std::remove(temp.c_str());  // a full disk must not leave a partial temporary behind
    throw Error(e.kind(), "cannot write '" + path + "': " + e.what());
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    std::remove(temp.c_str());
    errno = saved;
    fail("cannot rename '" + temp + "' to", path);
  }
  sync_directory(dir.string());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open", path);
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) fail("cannot read", path);
  return s.str();
}

}  // namespace masr
