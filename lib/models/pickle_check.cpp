// lib/models/pickle_check.cpp
// A small pickle machine (stack, marks, memo, lengths, storage references) over data.pkl as
// LibTorch's own zip reader extracts it (opcodes as in Python's pickletools, protocol 2).
#include "models/pickle_check.h"

#include <c10/util/Exception.h>
#include <caffe2/serialize/in_memory_adapter.h>
#include <caffe2/serialize/inline_container.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <vector>

namespace masr::models {
namespace {

using caffe2::serialize::PyTorchStreamReader;

uint64_t get_le(const std::string& in, size_t at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<uint8_t>(in[at + i])) << (8 * i);
  return v;
}

// The argument of each opcode: a fixed byte count, or a length prefix of 1/4/8 bytes then that
// many bytes, or (GLOBAL) two lines. kUnknown: an opcode LibTorch's pickler never writes.
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

// What the walk keeps of a value: enough to follow a storage reference, nothing of the rest.
struct Value {
  enum class Kind { kOther, kInt, kString, kGlobal, kTuple } kind = Kind::kOther;
  int64_t number = 0;
  std::string text;                                 // a string, or a GLOBAL as "module.name"
  std::vector<std::shared_ptr<const Value>> items;  // a tuple's
};
using ValuePtr = std::shared_ptr<const Value>;

ValuePtr make_value(Value::Kind kind, int64_t number = 0, std::string text = {}) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  v->number = number;
  v->text = std::move(text);
  return v;
}

// Bytes per element of the storage types LibTorch's pickler writes (torch.<ScalarType>Storage).
size_t storage_item_size(const std::string& global) {
  static const std::map<std::string, size_t> sizes = {
      {"torch.FloatStorage", 4},        {"torch.DoubleStorage", 8},
      {"torch.HalfStorage", 2},         {"torch.BFloat16Storage", 2},
      {"torch.LongStorage", 8},         {"torch.IntStorage", 4},
      {"torch.ShortStorage", 2},        {"torch.CharStorage", 1},
      {"torch.ByteStorage", 1},         {"torch.BoolStorage", 1},
      {"torch.ComplexFloatStorage", 8}, {"torch.ComplexDoubleStorage", 16}};
  const auto it = sizes.find(global);
  return it == sizes.end() ? 0 : it->second;
}

class PickleWalk {
 public:
  PickleWalk(const std::string& pickle, PyTorchStreamReader& archive)
      : in_(pickle), archive_(archive) {}

  std::string run() {
    while (at_ < in_.size()) {
      const size_t op_at = at_;
      const auto op = static_cast<uint8_t>(in_[at_++]);
      const int8_t argument = argument_of(op);
      std::string problem;
      if (argument == kUnknown) {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        problem =
            std::string("its pickle has opcode ") + hex + ", which LibTorch's pickler never writes";
      } else {
        problem = read_argument(argument);
        if (problem.empty()) problem = step(op);
      }
      if (!problem.empty()) return problem + " (at byte " + std::to_string(op_at) + ")";
      if (op == '.') return "";
    }
    return "its pickle has no STOP";
  }

 private:
  std::string read_argument(int8_t argument) {
    auto past_end = [&](uint64_t n) { return n > in_.size() - at_; };
    arg_at_ = at_;
    if (argument == kLines) {
      for (int line = 0; line < 2; ++line) {
        const size_t end = in_.find('\n', at_);
        if (end == std::string::npos) return "its pickle has an unterminated GLOBAL";
        at_ = end + 1;
      }
      arg_size_ = at_ - arg_at_;
      return "";
    }
    uint64_t size = argument >= 0 ? static_cast<uint64_t>(argument) : 0;
    if (argument <= kPrefix1) {
      const size_t prefix = argument == kPrefix1 ? 1 : argument == kPrefix4 ? 4 : 8;
      if (past_end(prefix)) return "its pickle ends inside a length";
      size = get_le(in_, at_, prefix);
      at_ += prefix;
    }
    if (past_end(size)) {
      return "its pickle declares " + std::to_string(size) + " bytes past its end";
    }
    arg_at_ = at_;
    arg_size_ = size;
    at_ += size;
    return "";
  }

  // The value an opcode that only pushes pushes.
  ValuePtr pushed_value(uint8_t op) const {
    using Kind = Value::Kind;
    const uint64_t raw = arg_size_ <= 8 ? get_le(in_, arg_at_, arg_size_) : 0;
    switch (op) {
      case 'K':
      case 'M':
        return make_value(Kind::kInt, static_cast<int64_t>(raw));
      case 'J':
        return make_value(Kind::kInt, static_cast<int32_t>(static_cast<uint32_t>(raw)));
      case 0x8a: {  // LONG1: little-endian two's complement; LibTorch refuses more than 8 bytes
        if (arg_size_ > 8) return make_value(Kind::kOther);
        const bool negative = arg_size_ > 0 && (raw >> (8 * arg_size_ - 1)) & 1;
        const uint64_t fill = negative && arg_size_ < 8 ? ~uint64_t{0} << (8 * arg_size_) : 0;
        return make_value(Kind::kInt, static_cast<int64_t>(raw | fill));
      }
      case 'X':
      case 'U':
      case 'T':
      case 0x8c:
      case 0x8d:
        return make_value(Kind::kString, 0, in_.substr(arg_at_, arg_size_));
      case 'c': {  // "module\nname\n" -> "module.name"
        std::string name = in_.substr(arg_at_, arg_size_ - 1);
        name[name.find('\n')] = '.';
        return make_value(Kind::kGlobal, 0, std::move(name));
      }
      case ')':
        return make_value(Kind::kTuple);
      default:
        return make_value(Kind::kOther);
    }
  }

  std::string step(uint8_t op) {
    const size_t above = stack_.size() - (marks_.empty() ? 0 : marks_.back());
    auto needs = [&](size_t n) { return above >= n; };
    switch (op) {
      case 0x80:  // PROTO
        return "";
      case '(':
        marks_.push_back(stack_.size());
        return "";
      case 't':
      case 'l':
      case 'd':
      case 'e':
      case 'u':
        return pop_to_mark(op);
      case 'q':
      case 'r':
      case 0x94:  // BINPUT, LONG_BINPUT, MEMOIZE
        if (!needs(1)) return "its pickle memoizes an empty stack";
        return put_memo(op == 0x94 ? memo_.size() : get_le(in_, arg_at_, arg_size_));
      case 'h':
      case 'j': {  // BINGET, LONG_BINGET
        const uint64_t index = get_le(in_, arg_at_, arg_size_);
        if (index >= memo_.size())
          return "its pickle reads memo " + std::to_string(index) + " unset";
        stack_.push_back(memo_[index]);
        return "";
      }
      case '.':
        return needs(1) ? "" : "its pickle's stack underflows";
      case 'Q':  // BINPERSID
        if (!needs(1)) return "its pickle's stack underflows";
        if (std::string problem = check_storage(*stack_.back()); !problem.empty()) return problem;
        stack_.back() = make_value(Value::Kind::kOther);
        return "";
      case 0x85:
      case 0x86:
      case 0x87:  // TUPLE1, TUPLE2, TUPLE3
        return make_tuple(op - 0x84u, needs(op - 0x84u));
      case 'R':
      case 0x81:  // REDUCE, NEWOBJ
        return pop_push(2, 2, needs(2));
      case 's':  // SETITEM
        return pop_push(3, 2, needs(3));
      case 'a':
      case 'b':  // APPEND, BUILD
        return pop_push(2, 1, needs(2));
      default:  // everything else pushes one value
        stack_.push_back(pushed_value(op));
        return "";
    }
  }

  // Pops `pops` of the `uses` values on top (leaving the rest as they were), pushing one
  // unknown value when all `uses` were consumed (REDUCE, NEWOBJ).
  std::string pop_push(size_t uses, size_t pops, bool enough) {
    if (!enough) return "its pickle's stack underflows";
    stack_.resize(stack_.size() - pops);
    if (pops == uses) stack_.push_back(make_value(Value::Kind::kOther));
    return "";
  }

  std::string make_tuple(size_t n, bool enough) {
    if (!enough) return "its pickle's stack underflows";
    auto tuple = std::make_shared<Value>();
    tuple->kind = Value::Kind::kTuple;
    tuple->items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    stack_.push_back(std::move(tuple));
    return "";
  }

  // TUPLE, LIST, DICT, APPENDS, SETITEMS: the values above the last mark.
  std::string pop_to_mark(uint8_t op) {
    if (marks_.empty()) return "its pickle pops a mark that was never pushed";
    const size_t mark = marks_.back();
    marks_.pop_back();
    const size_t count = stack_.size() - mark;
    // LibTorch 1.13 reads keys and values in pairs up to the top of its stack, so an odd count
    // reads one value past it.
    if ((op == 'd' || op == 'u') && count % 2 != 0) {
      return "its pickle builds a dict from an odd number (" + std::to_string(count) +
             ") of keys and values";
    }
    auto made = std::make_shared<Value>();
    made->kind = op == 't' ? Value::Kind::kTuple : Value::Kind::kOther;
    if (op == 't')
      made->items.assign(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    if (op == 'e' || op == 'u') {  // APPENDS, SETITEMS: into the list or dict below the mark
      if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) {
        return "its pickle's stack underflows";
      }
      return "";
    }
    stack_.push_back(std::move(made));
    return "";
  }

  // Memo indices are handed out in order (0, 1, 2, ...) by every pickler; a forged index far
  // beyond them would make LibTorch grow its memo table to it.
  std::string put_memo(uint64_t index) {
    if (index > memo_.size()) {
      return "its pickle writes memo " + std::to_string(index) + " before memo " +
             std::to_string(memo_.size());
    }
    if (index == memo_.size()) {
      memo_.push_back(stack_.back());
    } else {
      memo_[index] = stack_.back();
    }
    return "";
  }

  // A persistent id as LibTorch's pickler writes it: ('storage', torch.<T>Storage, key, device,
  // numel). LibTorch 1.13 takes the element type from the second item as a plain integer and wraps
  // numel * item size bytes around whatever record data/<key> holds, so a forged type or count
  // reads past the record; both are checked here against the record itself.
  std::string check_storage(const Value& id) {
    using Kind = Value::Kind;
    const auto& items = id.items;
    const size_t item_size = items.size() == 5 && items[1]->kind == Kind::kGlobal
                                 ? storage_item_size(items[1]->text)
                                 : 0;
    if (id.kind != Kind::kTuple || items.size() != 5 || items[0]->kind != Kind::kString ||
        items[0]->text != "storage" || item_size == 0 || items[2]->kind != Kind::kString ||
        items[3]->kind != Kind::kString || items[4]->kind != Kind::kInt) {
      return "its pickle has a storage reference that is not ('storage', torch.<T>Storage, key, "
             "device, size)";
    }
    const std::string& key = items[2]->text;
    const int64_t numel = items[4]->number;
    if (numel < 0) return "its pickle's storage '" + key + "' has a negative size";
    if (numel == 0) return "";  // LibTorch does not read the record then
    auto known = record_sizes_.find(key);
    if (known == record_sizes_.end()) {
      try {
        known = record_sizes_.emplace(key, std::get<1>(archive_.getRecord("data/" + key))).first;
      } catch (const c10::Error& e) {
        return "its pickle's storage '" + key +
               "' cannot be read: " + std::string(e.what_without_backtrace());
      }
    }
    if (static_cast<uint64_t>(numel) > known->second / item_size) {
      return "its pickle's storage '" + key + "' claims " + std::to_string(numel) + " " +
             items[1]->text + " elements; its record holds " + std::to_string(known->second) +
             " bytes";
    }
    return "";
  }

  const std::string& in_;
  PyTorchStreamReader& archive_;
  size_t at_ = 0;
  size_t arg_at_ = 0;    // the current opcode's argument (after any length prefix)
  size_t arg_size_ = 0;  // and its size in bytes
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;  // stack size at each MARK
  std::vector<ValuePtr> memo_;
  std::map<std::string, size_t> record_sizes_;
};

}  // namespace

std::string pickle_problem(const std::string& zip) {
  // The same reader torch::pickle_load opens (records found through the zip's central
  // directory), so the walk sees exactly the bytes LibTorch's unpickler will.
  try {
    PyTorchStreamReader archive(std::make_shared<caffe2::serialize::MemoryReadAdapter>(
        zip.data(), static_cast<off_t>(zip.size())));
    const auto [data, size] = archive.getRecord("data.pkl");
    const std::string pickle(static_cast<const char*>(data.get()), size);
    return PickleWalk(pickle, archive).run();
  } catch (const c10::Error& e) {
    return "its zip archive cannot be read: " + std::string(e.what_without_backtrace());
  }
}

}  // namespace masr::models
