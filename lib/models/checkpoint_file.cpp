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
#include "core/crc32.h"
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
  put_u32(out, crc32(out));
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
  if (crc32(bytes.data(), body) != stored) bad_file(path, "corrupt: the checksum does not match");

  auto sections = parse_sections(bytes, path);
  for (const char* name : {"model_type", "hparams.yaml", "state"}) {
    if (!sections.count(name)) bad_file(path, std::string("the section '") + name + "' is missing");
  }
  CheckpointData data;
  data.model_type = sections["model_type"];
  data.hparams_yaml = sections["hparams.yaml"];
  data.state = load_pickled_tensors(sections["state"], "model file '" + path + "': the state section");
  data.tokenizer_model = sections["tokenizer.model"];
  return data;
}

}  // namespace masr::models
