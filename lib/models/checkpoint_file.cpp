// lib/models/checkpoint_file.cpp
// The model file container (layout in checkpoint.h): reading, verifying and atomically writing
// the sections. Apart from AsrModel so that the parser builds (and is fuzzed) on its own.
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "models/checkpoint.h"
#include "models/pickle_check.h"

namespace masr::models {
namespace {

constexpr char kMagic[] = "MASRMODL";
constexpr char kEndMagic[] = "MASR_END";
constexpr size_t kMagicSize = 8;
constexpr size_t kHeaderSize = kMagicSize + 4 + 4;
constexpr size_t kTrailerSize = 4 + kMagicSize;

uint32_t crc32(const std::string& bytes, size_t size) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc = table[(crc ^ static_cast<uint8_t>(bytes[i])) & 0xFF] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
uint64_t get_le(const std::string& in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(in[at + i])) << (8 * i);
  return v;
}

void put_section(std::string& out, const std::string& name, const std::string& data) {
  put_u32(out, static_cast<uint32_t>(name.size()));
  out += name;
  put_u64(out, data.size());
  out += data;
}

std::string pickle_state(const std::vector<std::pair<std::string, at::Tensor>>& state) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : state) {
    dict.insert(name, tensor.detach().to(torch::kCPU).contiguous());
  }
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(dict));
  return std::string(bytes.begin(), bytes.end());
}

// LibTorch 1.13's set_ compares a tensor's extent with its storage without guarding the
// arithmetic against overflow; the storage's own size pickle_problem checked against its record.
bool within_storage(const at::Tensor& t) {
  if (t.numel() == 0) return true;
  const uint64_t capacity = t.storage().nbytes() / t.element_size();  // elements
  if (t.storage_offset() < 0 || static_cast<uint64_t>(t.storage_offset()) >= capacity) return false;
  uint64_t last = static_cast<uint64_t>(t.storage_offset());
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.stride(d) < 0) return false;
    const auto stride = static_cast<uint64_t>(t.stride(d));
    const auto steps = static_cast<uint64_t>(t.size(d) - 1);
    if (stride != 0 && steps > (capacity - 1 - last) / stride) return false;
    last += stride * steps;
  }
  return true;
}

std::vector<std::pair<std::string, at::Tensor>> unpickle_state(const std::string& bytes,
                                                               const std::string& path) {
  // LibTorch 1.13's unpickler trusts its input (fuzz/fuzz_checkpoint crashed it): check first.
  if (const std::string problem = pickle_problem(bytes); !problem.empty()) {
    throw_input_error("model file '" + path + "': the state section is corrupt (" + problem + ")");
  }
  std::vector<std::pair<std::string, at::Tensor>> state;
  try {
    const c10::IValue value = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    for (const auto& entry : value.toGenericDict()) {
      state.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
    }
  } catch (const c10::Error& e) {
    throw_input_error("model file '" + path + "': the state section cannot be read (corrupt): " +
                      std::string(e.what_without_backtrace()));
  } catch (const std::exception& e) {  // bad_alloc, length_error: still this file's fault
    throw_input_error("model file '" + path +
                      "': the state section cannot be read (corrupt): " + e.what());
  }
  for (const auto& [name, tensor] : state) {
    if (!within_storage(tensor)) {
      throw_input_error("model file '" + path + "': the state section is corrupt (tensor '" + name +
                        "' reaches past its storage)");
    }
  }
  return state;
}

[[noreturn]] void bad_file(const std::string& path, const std::string& why) {
  throw_input_error("model file '" + path + "': " + why);
}

std::string read_whole_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw_io_error("model file '" + path + "' does not exist or is not a regular file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_io_error("model file '" + path + "' cannot be opened: " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Splits the verified body into named sections.
std::map<std::string, std::string> parse_sections(const std::string& bytes,
                                                  const std::string& path) {
  std::map<std::string, std::string> sections;
  const size_t end = bytes.size() - kTrailerSize;
  const uint32_t count = static_cast<uint32_t>(get_le(bytes, kMagicSize + 4, 4));
  size_t at = kHeaderSize;
  for (uint32_t s = 0; s < count; ++s) {
    if (at + 4 > end) bad_file(path, "section " + std::to_string(s) + " runs past the end");
    const uint64_t name_size = get_le(bytes, at, 4);
    at += 4;
    if (name_size > end - at || end - at - name_size < 8) {
      bad_file(path, "section " + std::to_string(s) + " runs past the end");
    }
    std::string name = bytes.substr(at, name_size);
    at += name_size;
    const uint64_t size = get_le(bytes, at, 8);
    at += 8;
    if (size > end - at) bad_file(path, "section '" + name + "' runs past the end");
    sections[name] = bytes.substr(at, size);
    at += size;
  }
  return sections;
}

}  // namespace

void write_checkpoint(const std::string& path, const CheckpointData& data) {
  std::string out(kMagic, kMagicSize);
  put_u32(out, kCheckpointFormatVersion);
  put_u32(out, data.tokenizer_model.empty() ? 3 : 4);
  put_section(out, "model_type", data.model_type);
  put_section(out, "hparams.yaml", data.hparams_yaml);
  put_section(out, "state", pickle_state(data.state));
  if (!data.tokenizer_model.empty()) put_section(out, "tokenizer.model", data.tokenizer_model);
  put_u32(out, crc32(out, out.size()));
  out.append(kEndMagic, kMagicSize);
  write_file_atomically(path, out);
}

CheckpointData read_checkpoint(const std::string& path) {
  const std::string bytes = read_whole_file(path);
  const size_t prefix = std::min(bytes.size(), kMagicSize);
  if (bytes.compare(0, prefix, kMagic, prefix) != 0) {
    bad_file(path, "not a mamba-asr model (the file does not start with \"MASRMODL\")");
  }
  if (bytes.size() < kHeaderSize + kTrailerSize) {
    bad_file(path, "truncated (" + std::to_string(bytes.size()) + " bytes)");
  }
  const uint32_t version = static_cast<uint32_t>(get_le(bytes, kMagicSize, 4));
  if (version != kCheckpointFormatVersion) {
    bad_file(path, "format version " + std::to_string(version) + " is not supported (this " +
                       "build reads version " + std::to_string(kCheckpointFormatVersion) + ")");
  }
  if (bytes.compare(bytes.size() - kMagicSize, kMagicSize, kEndMagic, kMagicSize) != 0) {
    bad_file(path, "truncated: the end marker is missing (" + std::to_string(bytes.size()) +
                       " bytes; an interrupted copy?)");
  }
  const size_t body = bytes.size() - kTrailerSize;
  const uint32_t stored = static_cast<uint32_t>(get_le(bytes, body, 4));
  if (crc32(bytes, body) != stored) bad_file(path, "corrupt: the checksum does not match");

  auto sections = parse_sections(bytes, path);
  for (const char* name : {"model_type", "hparams.yaml", "state"}) {
    if (!sections.count(name)) bad_file(path, std::string("the section '") + name + "' is missing");
  }
  CheckpointData data;
  data.model_type = sections["model_type"];
  data.hparams_yaml = sections["hparams.yaml"];
  data.state = unpickle_state(sections["state"], path);
  data.tokenizer_model = sections["tokenizer.model"];
  return data;
}

}  // namespace masr::models
