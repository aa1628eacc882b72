// lib/core/remove_tree.cpp
// POSIX nftw walks the tree depth-first (children before their folder) without following links.
#include "core/remove_tree.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace masr {
namespace {

thread_local std::string* t_error = nullptr;
thread_local bool t_failed = false;

int remove_entry(const char* path, const struct stat* /*st*/, int type, struct FTW* /*ftw*/) {
  const int rc = (type == FTW_DP) ? ::rmdir(path) : ::unlink(path);
  if (rc != 0 && errno != ENOENT && !t_failed) {
    t_failed = true;
    if (t_error) *t_error = std::string(path) + ": " + std::strerror(errno);
  }
  return 0;  // keep going: remove as much as possible
}

}  // namespace

bool remove_tree(const std::string& path, std::string* error) noexcept {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;
    if (error) *error = path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) == 0 || errno == ENOENT) return true;
    if (error) *error = path + ": " + std::strerror(errno);
    return false;
  }
  t_error = error;
  t_failed = false;
  const int rc = ::nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  t_error = nullptr;
  if (rc != 0 && !t_failed) {
    if (error) *error = path + ": " + std::strerror(errno);
    return false;
  }
  return !t_failed;
}

}  // namespace masr
