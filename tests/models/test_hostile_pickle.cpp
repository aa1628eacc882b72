// tests/models/test_hostile_pickle.cpp
// Forged state pickles with a valid file checksum, one per class of input LibTorch 1.13's unpickler
// would crash on or read out of bounds with: each must be refused by models/pickle_check.cpp.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <fstream>
#include <iterator>
#include <string>

#include "../text/text_corpus.h"
#include "core/error.h"
#include "model_file_bytes.h"
#include "models/checkpoint.h"

using Catch::Contains;

namespace {

using masr::testing::bytes_of;
using masr::testing::crc32;
using masr::testing::write_bytes;

// Writes `bytes` with the model file's CRC-32 fixed, and returns the load error ("" if none).
std::string load_error(const std::string& path, std::string bytes) {
  const uint32_t crc = crc32(bytes, bytes.size() - 12);
  for (int i = 0; i < 4; ++i)
    bytes[bytes.size() - 12 + i] = static_cast<char>((crc >> (8 * i)) & 0xFF);
  write_bytes(path, bytes);
  try {
    (void)masr::models::read_checkpoint(path);
    return "";
  } catch (const masr::Error& e) {
    return e.what();
  }
}

// A model file holding `state`, as write_checkpoint writes it.
std::string model_file(const std::string& path,
                       std::vector<std::pair<std::string, at::Tensor>> state) {
  masr::models::CheckpointData data;
  data.model_type = "ctc";
  data.hparams_yaml = "d_model: 4\n";
  data.state = std::move(state);
  masr::models::write_checkpoint(path, data);
  return bytes_of(path);
}

// Replaces the one occurrence of `from` in `bytes` by `to` (same length: the zip stays valid).
std::string replaced(std::string bytes, const std::string& from, const std::string& to) {
  REQUIRE(from.size() == to.size());
  const size_t at = bytes.find(from);
  REQUIRE(at != std::string::npos);
  REQUIRE(bytes.find(from, at + 1) == std::string::npos);
  return bytes.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("hostile pickles: the fuzzer's unpickler segfault is refused", "[checkpoint][pickle]") {
  // fuzz_checkpoint found it: data.pkl's local zip header is named archive/atda.pkl, its central
  // directory entry archive/data.pkl, and the pickle starts with TUPLE2 on an empty stack. The
  // check looked data.pkl up by local header, found none and passed the file; LibTorch finds
  // records through the central directory and read stack_.back() of an empty stack.
  masr::testing::TempDir dir("hostile_pickle_segv");
  const std::string kept =
      std::string(MASR_SOURCE_DIR) + "/fuzz/corpus/checkpoint/crash_unpickler_central_directory";
  const std::string path = dir.file("segv.masr");
  CHECK_THAT(load_error(path, bytes_of(kept)),
             Contains(path) && Contains("state section is corrupt") &&
                 Contains("its pickle's stack underflows (at byte 2)"));
}

TEST_CASE("hostile pickles: a zip directory pointing past the file is refused, not read",
          "[checkpoint][pickle]") {
  // fuzz_checkpoint found it: miniz asked LibTorch's MemoryReadAdapter for bytes beyond the
  // buffer, which it copied from freed memory (ASan: heap-use-after-free, then SEGV). The check
  // now reads through an adapter that returns only the bytes that exist.
  masr::testing::TempDir dir("hostile_pickle_past_end");
  const std::string kept =
      std::string(MASR_SOURCE_DIR) + "/fuzz/corpus/checkpoint/crash_read_past_end";
  const std::string path = dir.file("past_end.masr");
  const std::string error = load_error(path, bytes_of(kept));
  INFO(error);
  CHECK_THAT(error, Contains(path) && Contains("state section is corrupt") &&
                        Contains("file read failed"));
}

TEST_CASE("hostile pickles: each class LibTorch's unpickler does not check is refused",
          "[checkpoint][pickle]") {
  masr::testing::TempDir dir("hostile_pickle");
  const std::string path = dir.file("forged.masr");
  const std::string good = model_file(path, {{"weight_name", torch::arange(6.0f).view({2, 3})}});
  REQUIRE(load_error(path, good).empty());
  // LibTorch's pickler writes a typed dict as PROTO 2, GLOBAL torch.jit._pickle.restore_type_tag,
  // EMPTY_DICT, MARK, (key, tensor)..., SETITEMS, its type, TUPLE2, REDUCE, STOP; a tensor as
  // GLOBAL _rebuild_tensor_v2, MARK, MARK, 'storage', GLOBAL torch.FloatStorage, '0', 'cpu', 6,
  // TUPLE, BINPERSID, 0, (2, 3), (3, 1), False, OrderedDict(), TUPLE, REDUCE.
  const std::string pickle_start = std::string("\x80\x02", 2) + "ctorch.jit._pickle\n";

  SECTION("data.pkl named differently in its local header than in the central directory") {
    // The check must read the record LibTorch reads (found through the central directory).
    std::string forged = replaced(good, "archive/data.pklFB", "archive/atda.pklFB");
    forged = replaced(forged, pickle_start, "\x80\x02\x86" + pickle_start.substr(3));  // TUPLE2
    CHECK_THAT(load_error(path, forged),
               Contains(path) && Contains("its pickle's stack underflows (at byte 2)"));
  }
  SECTION("an archive without data.pkl (its central directory entry renamed)") {
    const std::string forged =
        replaced(good, "archive/data.pklPK\x01\x02", "archive/data.pkkPK\x01\x02");
    CHECK_THAT(load_error(path, forged),
               Contains(path) &&
                   Contains("state section is corrupt (its zip archive cannot be "
                            "read: ") &&
                   Contains("data.pkl"));
  }
  SECTION("an opcode LibTorch's pickler never writes") {
    const std::string forged = replaced(good, pickle_start,
                                        "\x80\x02"
                                        "0" +
                                            pickle_start.substr(3));
    CHECK_THAT(load_error(path, forged),
               Contains(path) && Contains("opcode 0x30, which LibTorch's pickler never writes "
                                          "(at byte 2)"));
  }
  SECTION("a storage claiming more elements than its record holds") {
    // numel 6 -> 255 over a 24-byte record: LibTorch would wrap 1020 bytes around it.
    const std::string forged =
        replaced(good, std::string("cpuq\x06K\x06t", 8), std::string("cpuq\x06K\xfft", 8));
    CHECK_THAT(load_error(path, forged),
               Contains(path) && Contains("storage '0' claims 255 torch.FloatStorage elements; "
                                          "its record holds 24 bytes"));
  }
  SECTION("a storage type that is not a torch.<T>Storage global") {
    // LibTorch 1.13 takes whatever is there as a ScalarType number.
    const std::string forged = replaced(good, "torch\nFloatStorage\n", "torch\nFloatStorag3\n");
    CHECK_THAT(load_error(path, forged),
               Contains(path) && Contains("storage reference that is not ('storage', "));
  }
  SECTION("a dict built from an odd number of keys and values") {
    // None before the key: SETITEMS over 3 values (LibTorch would read one past its stack).
    const std::string forged = replaced(good, std::string("X\x0b\x00\x00\x00weight_name", 16),
                                        std::string("NX\x0a\x00\x00\x00weight_nam", 16));
    CHECK_THAT(load_error(path, forged),
               Contains(path) && Contains("builds a dict from an odd number (3)"));
  }
  SECTION("a memo index written out of order") {
    const std::string forged = replaced(good, "weight_nameq\x01", "weight_nameq\x05");
    CHECK_THAT(load_error(path, forged), Contains(path) && Contains("writes memo 5 before memo 1"));
  }
  SECTION("a memo index read before it is written") {
    const std::string forged = replaced(good, "weight_nameq\x01", "weight_nameh\x09");
    CHECK_THAT(load_error(path, forged), Contains(path) && Contains("reads memo 9 unset"));
  }
  SECTION("a tensor reaching past its storage") {
    // strides (3, 1) -> (3, 200): 403 elements over a storage of 6, which LibTorch 1.13's
    // _rebuild_tensor_v2 accepts.
    const std::string forged = replaced(good, "(K\x03K\x01t", "(K\x03K\xc8t");
    CHECK_THAT(
        load_error(path, forged),
        Contains(path) &&
            Contains("state section is corrupt (tensor 'weight_name' reaches past its storage)"));
  }
}
