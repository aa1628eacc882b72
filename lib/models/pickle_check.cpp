// lib/models/pickle_check.cpp
// A small pickle machine (stack, marks, memo, lengths, storage references) over data.pkl as
// LibTorch's own zip reader extracts it (opcodes as in Python's pickletools, protocol 2).
#include "models/pickle_check.h"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/serialize.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "core/error.h"

namespace masr::models {
namespace {

using caffe2::serialize::PyTorchStreamReader;

uint64_t get_le(const std::string& in, size_t at, size_t bytes) {
  uint64_t v = 0;
  for (size_t i = 0; i < bytes && at + i < in.size(); ++i)  // bytes past the end read as 0
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

// LibTorch's zip reader allocates a record's declared uncompressed size before inflating it, so
// a deflated record declaring 4 GB in a 1 KB file makes it allocate 4 GB (LibTorch's writer only
// stores records). Returns the first record declaring more bytes than the whole archive holds,
// from the central directory found as miniz finds it: the last end-of-central-directory record,
// or the zip64 record its locator points to.
std::string oversized_record(const std::string& zip) {
  const size_t n = zip.size();
  size_t eocd = zip.rfind("PK\x05\x06");
  while (eocd != std::string::npos && n - eocd < 22) {
    eocd = eocd == 0 ? std::string::npos : zip.rfind("PK\x05\x06", eocd - 1);
  }
  if (eocd == std::string::npos) return "";  // LibTorch's reader refuses the archive itself
  uint64_t entries = get_le(zip, eocd + 10, 2), at = get_le(zip, eocd + 16, 4);
  if (eocd >= 76 && get_le(zip, eocd - 20, 4) == 0x07064b50) {  // the zip64 locator
    const uint64_t z64 = get_le(zip, eocd - 12, 8);
    if (z64 <= n - 56 && get_le(zip, z64, 4) == 0x06064b50) {
      entries = get_le(zip, z64 + 32, 8);
      at = get_le(zip, z64 + 48, 8);
    }
  }
  for (uint64_t e = 0; e < entries && at <= n && n - at >= 46; ++e) {
    if (get_le(zip, at, 4) != 0x02014b50) break;
    const size_t name = get_le(zip, at + 28, 2), extra = get_le(zip, at + 30, 2);
    const size_t comment = get_le(zip, at + 32, 2);
    if (n - at - 46 < name + extra) break;
    uint64_t size = get_le(zip, at + 24, 4);
    if (size == 0xFFFFFFFFu) {  // the 64-bit size is the first value of the zip64 extra field
      for (size_t x = at + 46 + name; x + 4 <= at + 46 + name + extra;) {
        const size_t id = get_le(zip, x, 2), length = get_le(zip, x + 2, 2);
        if (id == 1 && length >= 8 && x + 12 <= at + 46 + name + extra)
          size = get_le(zip, x + 4, 8);
        x += 4 + length;
      }
    }
    if (size > n) {
      return "its zip record '" + zip.substr(at + 46, name) + "' declares " + std::to_string(size) +
             " bytes, in an archive of " + std::to_string(n);
    }
    at += 46 + name + extra + comment;
  }
  return "";
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

// LibTorch's MemoryReadAdapter copies whatever range miniz asks for, past the buffer's end too:
// a forged end-of-central-directory record pointing beyond the file made it read freed memory
// (a fuzzing finding). This one copies only what exists and reports the short read, which miniz
// turns into an error.
class BoundedReadAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BoundedReadAdapter(const std::string& bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= bytes_.size()) return 0;
    const size_t available = std::min<uint64_t>(n, bytes_.size() - pos);
    std::memcpy(buf, bytes_.data() + pos, available);
    return available;
  }

 private:
  const std::string& bytes_;
};

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

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> load_pickled_tensors(const std::string& zip,
                                                                     const std::string& what) {
  // LibTorch 1.13's unpickler trusts its input (fuzz/fuzz_checkpoint crashed it): check first.
  if (const std::string problem = pickle_problem(zip); !problem.empty()) {
    throw_input_error(what + " is corrupt (" + problem + ")");
  }
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  try {
    const c10::IValue value = torch::pickle_load(std::vector<char>(zip.begin(), zip.end()));
    if (!value.isGenericDict()) throw_input_error(what + " is corrupt (not a dict of tensors)");
    for (const auto& entry : value.toGenericDict()) {
      if (!entry.key().isString() || !entry.value().isTensor()) {
        throw_input_error(what + " is corrupt (not a dict of name -> tensor)");
      }
      tensors.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
    }
  } catch (const c10::Error& e) {
    throw_input_error(what + " cannot be read (corrupt): " + e.what_without_backtrace());
  } catch (const masr::Error&) {
    throw;
  } catch (const std::exception& e) {  // bad_alloc, length_error: still this input's fault
    throw_input_error(what + " cannot be read (corrupt): " + e.what());
  }
  for (const auto& [name, tensor] : tensors) {
    if (!within_storage(tensor)) {
      throw_input_error(what + " is corrupt (tensor '" + name + "' reaches past its storage)");
    }
  }
  return tensors;
}

std::string pickle_problem(const std::string& zip) {
  // The same reader torch::pickle_load opens (records found through the zip's central
  // directory), so the walk sees exactly the bytes LibTorch's unpickler will.
  if (std::string problem = oversized_record(zip); !problem.empty()) return problem;
  try {
    PyTorchStreamReader archive(std::make_shared<BoundedReadAdapter>(zip));
    const auto [data, size] = archive.getRecord("data.pkl");
    const std::string pickle(static_cast<const char*>(data.get()), size);
    return PickleWalk(pickle, archive).run();
  } catch (const c10::Error& e) {
    return "its zip archive cannot be read: " + std::string(e.what_without_backtrace());
  }
}

}  // namespace masr::models
