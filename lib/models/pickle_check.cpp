// lib/models/pickle_check.cpp
// A small pickle-machine walk (stack depth, marks, memo, lengths) over the opcodes LibTorch's
// unpickler reads (protocol 2 as torch.save writes it: see Python's pickletools for the opcodes).
#include "models/pickle_check.h"

#include <array>
#include <cstdint>
#include <set>
#include <vector>

namespace masr::models {
namespace {

uint64_t get_le(const std::string& in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(in[at + i])) << (8 * i);
  return v;
}

// The argument of each opcode: a fixed byte count, or a length prefix of 1/4/8 bytes then that
// many bytes, or (GLOBAL) two lines.
enum : int8_t { kUnknown = -1, kPrefix1 = -3, kPrefix4 = -4, kPrefix8 = -5, kLines = -6 };

int8_t argument_of(uint8_t op) {
  static const std::array<int8_t, 256> table = [] {
    std::array<int8_t, 256> t{};
    t.fill(kUnknown);
    for (uint8_t c : std::string("()]}tusaeRbQNld.\x85\x86\x87\x88\x89\x81\x94")) t[c] = 0;
    for (uint8_t c : std::string("qhK\x80")) t[c] = 1;
    for (uint8_t c : std::string("rjJ")) t[c] = 4;
    t['M'] = 2;
    t['G'] = 8;
    for (uint8_t c : std::string("\x8aUC\x8c")) t[c] = kPrefix1;
    for (uint8_t c : std::string("XBT")) t[c] = kPrefix4;
    t[0x8d] = t[0x8e] = kPrefix8;
    t['c'] = kLines;
    return t;
  }();
  return table[op];
}

// Stack effect of the opcodes that neither use the mark nor the memo: {needs, pops, pushes}.
struct Effect {
  int needs, pops, pushes;
};

Effect effect_of(uint8_t op) {
  switch (op) {
    case 0x80:
      return {0, 0, 0};  // PROTO
    case 0x85:
    case 'Q':
      return {1, 1, 1};  // TUPLE1, BINPERSID
    case 0x86:
    case 'R':
    case 0x81:
      return {2, 2, 1};  // TUPLE2, REDUCE, NEWOBJ
    case 0x87:
      return {3, 3, 1};  // TUPLE3
    case 's':
      return {3, 2, 0};  // SETITEM
    case 'a':
    case 'b':
      return {2, 1, 0};  // APPEND, BUILD
    case '.':
      return {1, 0, 0};  // STOP
    default:
      return {0, 0, 1};  // everything else pushes one value
  }
}

size_t find_data_pkl(const std::string& zip) {
  // The local header of ".../data.pkl" (sizes are in the central directory: entries are
  // streamed, and pickle_save writes the tensors first).
  for (size_t h = zip.find("PK\x03\x04");
       h != std::string::npos && zip.size() >= 30 && h <= zip.size() - 30;
       h = zip.find("PK\x03\x04", h + 4)) {
    const size_t name_size = get_le(zip, h + 26, 2);
    const size_t data = h + 30 + name_size + get_le(zip, h + 28, 2);
    if (data <= zip.size() && name_size >= 8 &&
        zip.compare(h + 30 + name_size - 8, 8, "data.pkl") == 0) {
      return data;
    }
  }
  return std::string::npos;
}

}  // namespace

std::string pickle_problem(const std::string& zip) {
  size_t at = find_data_pkl(zip);
  if (at == std::string::npos) return "";
  auto past_end = [&](uint64_t n) { return n > zip.size() || at > zip.size() - n; };
  std::vector<size_t> marks;  // stack depth at each MARK
  std::set<uint64_t> memo;
  size_t depth = 0;
  while (at < zip.size()) {
    const auto op = static_cast<uint8_t>(zip[at++]);
    const int8_t argument = argument_of(op);
    if (argument == kUnknown) return "";
    uint64_t skip = argument >= 0 ? static_cast<uint64_t>(argument) : 0;
    uint64_t value = 0;  // a fixed-size argument's value (memo indices)
    if (argument == kLines) {
      for (int line = 0; line < 2; ++line) {
        const size_t end = zip.find('\n', at);
        if (end == std::string::npos) return "an unterminated GLOBAL";
        at = end + 1;
      }
    } else if (argument <= kPrefix1) {
      const int prefix = argument == kPrefix1 ? 1 : argument == kPrefix4 ? 4 : 8;
      if (past_end(prefix)) return "its pickle ends inside a length";
      skip = get_le(zip, at, prefix);
      at += prefix;
    }
    if (past_end(skip))
      return "its pickle declares " + std::to_string(skip) + " bytes past its end";
    if (argument > 0 && argument <= 8) value = get_le(zip, at, argument);
    at += skip;
    const size_t floor = marks.empty() ? 0 : marks.back();
    if (op == '(') {
      marks.push_back(depth);
    } else if (op == 't' || op == 'l' || op == 'd' || op == 'e' || op == 'u') {
      if (marks.empty()) return "its pickle pops a mark that was never pushed";
      depth = marks.back();
      marks.pop_back();
      if (op == 'e' || op == 'u') {  // APPENDS, SETITEMS: into the list or dict below the mark
        if (depth <= (marks.empty() ? 0 : marks.back())) return "its pickle's stack underflows";
      } else {
        ++depth;
      }
    } else if (op == 'q' || op == 'r' || op == 0x94) {  // BINPUT, LONG_BINPUT, MEMOIZE
      if (depth <= floor) return "its pickle memoizes an empty stack";
      memo.insert(op == 0x94 ? memo.size() : value);
    } else if (op == 'h' || op == 'j') {  // BINGET, LONG_BINGET
      if (!memo.count(value)) return "its pickle reads memo " + std::to_string(value) + " unset";
      ++depth;
    } else {
      const Effect e = effect_of(op);
      if (depth < floor + static_cast<size_t>(e.needs)) return "its pickle's stack underflows";
      depth = depth - e.pops + e.pushes;
      if (op == '.') return "";
    }
  }
  return "its pickle has no STOP";
}

}  // namespace masr::models
