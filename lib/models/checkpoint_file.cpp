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

// The argument of each pickle opcode LibTorch reads: a fixed byte count, or a length prefix of
// 1/4/8 bytes then that many bytes, or (GLOBAL) two lines; kStop ends the walk, kUnknown too.
enum : int8_t {
  kUnknown = -1,
  kStop = -2,
  kPrefix1 = -3,
  kPrefix4 = -4,
  kPrefix8 = -5,
  kLines = -6
};

int8_t pickle_argument(uint8_t op) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t{};
    t.fill(kUnknown);
    for (uint8_t c : std::string("()]}tusaeRbQNld\x85\x86\x87\x88\x89\x81\x94")) t[c] = 0;
    for (uint8_t c : std::string("qhK\x80")) t[c] = 1;
    for (uint8_t c : std::string("rjJ")) t[c] = 4;
    t['M'] = 2;
    t['G'] = 8;
    for (uint8_t c : std::string("\x8aUC\x8c")) t[c] = kPrefix1;
    for (uint8_t c : std::string("XBT")) t[c] = kPrefix4;
    t[0x8d] = t[0x8e] = kPrefix8;
    t['c'] = kLines;
    t['.'] = kStop;
    return t;
  }();
  return table[op];
}

// LibTorch's unpickler allocates every string and byte string at the length its opcode declares
// before reading it, so a forged pickle declaring 4 GB would take 4 GB (found by
// fuzz/fuzz_checkpoint). This walks the opcodes of the archive's data.pkl and returns the first
// declared length that runs past the section, or 0. It stops at STOP or at an opcode it does not
// know: LibTorch refuses those itself.
uint64_t pickle_overrun(const std::string& zip) {
  // The local header of ".../data.pkl" (sizes are in the central directory: entries are
  // streamed, and pickle_save writes the tensors first).
  size_t at = std::string::npos;
  for (size_t h = zip.find("PK\x03\x04");
       h != std::string::npos && zip.size() >= 30 && h <= zip.size() - 30;
       h = zip.find("PK\x03\x04", h + 4)) {
    const size_t name_size = get_le(zip, h + 26, 2);
    const size_t data = h + 30 + name_size + get_le(zip, h + 28, 2);
    if (data <= zip.size() && name_size >= 8 &&
        zip.compare(h + 30 + name_size - 8, 8, "data.pkl") == 0) {
      at = data;
      break;
    }
  }
  if (at == std::string::npos) return 0;
  auto past_end = [&](uint64_t n) { return n > zip.size() || at > zip.size() - n; };
  while (at < zip.size()) {
    const int8_t argument = pickle_argument(static_cast<uint8_t>(zip[at++]));
    if (argument == kStop || argument == kUnknown) return 0;
    uint64_t skip = argument >= 0 ? static_cast<uint64_t>(argument) : 0;
    if (argument == kLines) {
      for (int line = 0; line < 2; ++line) {
        const size_t end = zip.find('\n', at);
        if (end == std::string::npos) return 0;
        at = end + 1;
      }
    } else if (argument <= kPrefix1) {
      const int prefix = argument == kPrefix1 ? 1 : argument == kPrefix4 ? 4 : 8;
      if (past_end(prefix)) return prefix;
      skip = get_le(zip, at, prefix);
      at += prefix;
    }
    if (past_end(skip)) return skip;
    at += skip;
  }
  return 0;
}

std::vector<std::pair<std::string, at::Tensor>> unpickle_state(const std::string& bytes,
                                                               const std::string& path) {
  if (const uint64_t overrun = pickle_overrun(bytes)) {
    throw_input_error("model file '" + path + "': the state section is corrupt (its pickle " +
                      "declares " + std::to_string(overrun) + " bytes past its end)");
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
