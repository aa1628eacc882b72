// tests/core/test_remove_tree.cpp
// remove_tree deletes nested folders, files and links (without following links), and reports
// what it could not delete.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/remove_tree.h"

namespace fs = std::filesystem;

namespace {
fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("masr_" + name + "_" + std::to_string(std::random_device()()));
  fs::create_directories(dir);
  return dir;
}
void touch(const fs::path& p) { std::ofstream(p) << "x"; }
}  // namespace

TEST_CASE("remove_tree: deletes a nested tree and leaves link targets alone", "[core]") {
  const fs::path root = fresh_dir("remove_tree");
  const fs::path outside = fresh_dir("remove_tree_outside");
  touch(outside / "kept.txt");
  fs::create_directories(root / "a" / "b" / "c");
  touch(root / "a" / "b" / "c" / "f1");
  touch(root / "a" / "f2");
  touch(root / "f3");
  fs::create_directory_symlink(outside, root / "a" / "link_to_outside");

  std::string error;
  CHECK(masr::remove_tree(root.string(), &error));
  CHECK(error.empty());
  CHECK_FALSE(fs::exists(root));
  CHECK(fs::exists(outside / "kept.txt"));  // the link was removed, not followed

  CHECK(masr::remove_tree(outside.string()));
  CHECK_FALSE(fs::exists(outside));
}

TEST_CASE("remove_tree: a missing path is fine and a single file is deleted", "[core]") {
  const fs::path root = fresh_dir("remove_tree_file");
  CHECK(masr::remove_tree((root / "does_not_exist").string()));
  touch(root / "file");
  CHECK(masr::remove_tree((root / "file").string()));
  CHECK_FALSE(fs::exists(root / "file"));
  CHECK(masr::remove_tree(root.string()));
}

TEST_CASE("remove_tree: reports a path it cannot reach", "[core]") {
  const fs::path root = fresh_dir("remove_tree_unreachable");
  touch(root / "file");
  std::string error;
  // "file/child": a file is not a folder (ENOTDIR), whoever runs the test.
  CHECK_FALSE(masr::remove_tree((root / "file" / "child").string(), &error));
  CHECK(error.find("file/child") != std::string::npos);
  CHECK(error.find("Not a directory") != std::string::npos);
  CHECK(masr::remove_tree(root.string()));
}
