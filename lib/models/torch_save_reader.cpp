// lib/models/torch_save_reader.cpp
// A pickle protocol-2 stack machine over the opcodes torch.save emits for dicts, lists, numbers,
// strings and tensors (torch._utils._rebuild_tensor_v2 over persistent storages data/<key>).
#include "models/torch_save_reader.h"

#include <ATen/ATen.h>
#include <caffe2/serialize/inline_container.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/error.h"

namespace masr::models {
namespace {

using Ptr = std::shared_ptr<PyValue>;

Ptr make(PyValue::Kind kind) {
  auto v = std::make_shared<PyValue>();
  v->kind = kind;
  if (kind == PyValue::Kind::kList) {
    v->items = std::make_shared<std::vector<Ptr>>();
  } else if (kind == PyValue::Kind::kDict) {
    v->entries = std::make_shared<std::vector<std::pair<Ptr, Ptr>>>();
  }
  return v;
}

at::ScalarType storage_dtype(const std::string& name, const std::string& path) {
  static const std::map<std::string, at::ScalarType> types = {
      {"torch.FloatStorage", at::kFloat}, {"torch.DoubleStorage", at::kDouble},
      {"torch.HalfStorage", at::kHalf},   {"torch.BFloat16Storage", at::kBFloat16},
      {"torch.LongStorage", at::kLong},   {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort}, {"torch.CharStorage", at::kChar},
      {"torch.ByteStorage", at::kByte},   {"torch.BoolStorage", at::kBool}};
  const auto it = types.find(name);
  if (it == types.end()) {
    throw_input_error("torch.save file '" + path + "': unsupported storage type " + name);
  }
  return it->second;
}

class Unpickler {
 public:
  Unpickler(caffe2::serialize::PyTorchStreamReader& reader, std::string path)
      : reader_(reader), path_(std::move(path)) {
    auto [data, size] = reader_.getRecord("data.pkl");
    bytes_.assign(static_cast<const char*>(data.get()), size);
  }

  Ptr run() {
    while (true) {
      const uint8_t op = byte();
      if (op == '.') break;  // STOP
      step(op);
    }
    if (stack_.size() != 1) fail("unbalanced stack at STOP");
    return stack_.back();
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw_input_error("torch.save file '" + path_ + "': " + why + " (at byte " +
                      std::to_string(at_) + " of data.pkl)");
  }
  uint8_t byte() {
    if (at_ >= bytes_.size()) fail("unexpected end of the pickle");
    return static_cast<uint8_t>(bytes_[at_++]);
  }
  uint64_t le(int n) {
    uint64_t v = 0;
    for (int k = 0; k < n; ++k) v |= static_cast<uint64_t>(byte()) << (8 * k);
    return v;
  }
  std::string take(size_t n) {
    if (n > bytes_.size() - at_) fail("unexpected end of the pickle");
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::string line() {
    const size_t end = bytes_.find('\n', at_);
    if (end == std::string::npos) fail("unterminated GLOBAL");
    std::string s = bytes_.substr(at_, end - at_);
    at_ = end + 1;
    return s;
  }
  Ptr pop() {
    if (stack_.empty()) fail("pop from an empty stack");
    Ptr v = stack_.back();
    stack_.pop_back();
    return v;
  }
  std::vector<Ptr> pop_mark() {
    if (marks_.empty()) fail("no MARK");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Ptr> out(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return out;
  }
  Ptr tuple(std::vector<Ptr> items) {
    Ptr v = make(PyValue::Kind::kList);
    *v->items = std::move(items);
    return v;
  }
  Ptr integer(int64_t i) {
    Ptr v = make(PyValue::Kind::kInt);
    v->i = i;
    return v;
  }
  void set_items(PyValue& dict, const std::vector<Ptr>& kv) {
    if (dict.kind != PyValue::Kind::kDict) fail("SETITEM on a non-dict");
    for (size_t k = 0; k + 1 < kv.size(); k += 2) dict.entries->emplace_back(kv[k], kv[k + 1]);
  }

  void step(uint8_t op);
  Ptr call(const Ptr& fn, const Ptr& args);
  Ptr persistent_load(const Ptr& pid);

  caffe2::serialize::PyTorchStreamReader& reader_;
  std::string path_;
  std::string bytes_;
  size_t at_ = 0;
  std::vector<Ptr> stack_;
  std::vector<size_t> marks_;
  std::map<uint64_t, Ptr> memo_;
};

void Unpickler::step(uint8_t op) {
  switch (op) {
    case 0x80:
      byte();
      return;    // PROTO
    case 'c': {  // GLOBAL
      Ptr g = make(PyValue::Kind::kGlobal);
      g->s = line();
      g->s += "." + line();
      stack_.push_back(g);
      return;
    }
    case 'q':
    case 'r': {  // BINPUT, LONG_BINPUT
      const uint64_t index = le(op == 'q' ? 1 : 4);
      if (stack_.empty()) fail("BINPUT on an empty stack");
      memo_[index] = stack_.back();
      return;
    }
    case 'h':
    case 'j': {  // BINGET, LONG_BINGET
      const auto it = memo_.find(le(op == 'h' ? 1 : 4));
      if (it == memo_.end()) fail("BINGET of an unknown memo entry");
      stack_.push_back(it->second);
      return;
    }
    case '(':
      marks_.push_back(stack_.size());
      return;  // MARK
    case ')':
      stack_.push_back(tuple({}));
      return;  // EMPTY_TUPLE
    case ']':
      stack_.push_back(make(PyValue::Kind::kList));
      return;
    case '}':
      stack_.push_back(make(PyValue::Kind::kDict));
      return;
    case 't':
      stack_.push_back(tuple(pop_mark()));
      return;
    case 'l': {  // LIST
      Ptr v = make(PyValue::Kind::kList);
      *v->items = pop_mark();
      stack_.push_back(v);
      return;
    }
    case 0x85:
    case 0x86:
    case 0x87: {  // TUPLE1..3
      std::vector<Ptr> items(op - 0x84);
      for (size_t k = items.size(); k-- > 0;) items[k] = pop();
      stack_.push_back(tuple(std::move(items)));
      return;
    }
    case 'N':
      stack_.push_back(make(PyValue::Kind::kNone));
      return;
    case 0x88:
    case 0x89: {  // NEWTRUE, NEWFALSE
      Ptr v = make(PyValue::Kind::kBool);
      v->b = op == 0x88;
      stack_.push_back(v);
      return;
    }
    case 'K':
      stack_.push_back(integer(static_cast<int64_t>(le(1))));
      return;
    case 'M':
      stack_.push_back(integer(static_cast<int64_t>(le(2))));
      return;
    case 'J':
      stack_.push_back(integer(static_cast<int32_t>(le(4))));
      return;
    case 0x8a: {  // LONG1: little-endian two's complement
      const size_t n = byte();
      if (n > 8) fail("integer wider than 64 bits");
      uint64_t v = le(static_cast<int>(n));
      if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t{0} << (8 * n);
      stack_.push_back(integer(static_cast<int64_t>(v)));
      return;
    }
    case 'G': {  // BINFLOAT, big-endian double
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) bits = (bits << 8) | byte();
      Ptr v = make(PyValue::Kind::kFloat);
      std::memcpy(&v->f, &bits, sizeof(bits));
      stack_.push_back(v);
      return;
    }
    case 'X':
    case 0x8c: {  // BINUNICODE, SHORT_BINUNICODE
      Ptr v = make(PyValue::Kind::kString);
      v->s = take(le(op == 'X' ? 4 : 1));
      stack_.push_back(v);
      return;
    }
    case 'a': {  // APPEND
      Ptr item = pop();
      if (stack_.empty() || !stack_.back()->items) fail("APPEND to a non-list");
      stack_.back()->items->push_back(item);
      return;
    }
    case 'e': {  // APPENDS
      auto items = pop_mark();
      if (stack_.empty() || !stack_.back()->items) fail("APPENDS to a non-list");
      for (auto& item : items) stack_.back()->items->push_back(item);
      return;
    }
    case 's': {  // SETITEM
      Ptr value = pop(), key = pop();
      set_items(*stack_.back(), {key, value});
      return;
    }
    case 'u': {  // SETITEMS
      auto kv = pop_mark();
      if (stack_.empty()) fail("SETITEMS without a dict");
      set_items(*stack_.back(), kv);
      return;
    }
    case 'R': {  // REDUCE
      Ptr args = pop(), fn = pop();
      stack_.push_back(call(fn, args));
      return;
    }
    case 'b':
      pop();
      return;  // BUILD: only OrderedDict's _metadata, which we do not need
    case 'Q':
      stack_.push_back(persistent_load(pop()));
      return;  // BINPERSID
    default: {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02x", op);
      fail(std::string("unsupported pickle opcode ") + hex);
    }
  }
}

Ptr Unpickler::call(const Ptr& fn, const Ptr& args) {
  if (fn->kind != PyValue::Kind::kGlobal || !args->items) fail("REDUCE of a non-callable");
  const auto& a = *args->items;
  if (fn->s == "collections.OrderedDict" || fn->s == "builtins.dict") {
    return make(PyValue::Kind::kDict);
  }
  if (fn->s == "torch._utils._rebuild_tensor_v2" && a.size() >= 4) {
    const at::Tensor& storage = a[0]->tensor;
    std::vector<int64_t> size, stride;
    for (const auto& s : *a[2]->items) size.push_back(s->i);
    for (const auto& s : *a[3]->items) stride.push_back(s->i);
    Ptr v = make(PyValue::Kind::kTensor);
    v->tensor = storage.as_strided(size, stride, a[1]->i).clone(at::MemoryFormat::Contiguous);
    return v;
  }
  if (fn->s == "torch._utils._rebuild_parameter" && !a.empty()) return a[0];
  fail("cannot call " + fn->s);
}

Ptr Unpickler::persistent_load(const Ptr& pid) {
  // ('storage', <storage class>, key, location, numel)
  if (!pid->items || pid->items->size() < 5 || (*pid->items)[0]->s != "storage") {
    fail("unsupported persistent id");
  }
  const auto& p = *pid->items;
  const at::ScalarType dtype = storage_dtype(p[1]->s, path_);
  const std::string record = "data/" + p[2]->s;
  if (!reader_.hasRecord(record)) fail("missing storage record " + record);
  auto [data, bytes] = reader_.getRecord(record);
  const int64_t numel = p[4]->i;
  if (static_cast<size_t>(numel) * c10::elementSize(dtype) > bytes) fail("short storage " + record);
  Ptr v = make(PyValue::Kind::kTensor);
  v->tensor = at::empty({numel}, at::TensorOptions().dtype(dtype));
  std::memcpy(v->tensor.data_ptr(), data.get(),
              static_cast<size_t>(numel) * c10::elementSize(dtype));
  return v;
}

}  // namespace

const PyValue* PyValue::find(const std::string& key) const {
  if (kind != Kind::kDict) return nullptr;
  for (const auto& [k, v] : *entries) {
    if (k->kind == Kind::kString && k->s == key) return v.get();
  }
  return nullptr;
}

std::shared_ptr<PyValue> read_torch_save(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw_io_error("torch.save file '" + path + "' does not exist or is not a regular file");
  }
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    return Unpickler(reader, path).run();
  } catch (const c10::Error& e) {
    throw_input_error("torch.save file '" + path +
                      "' cannot be read (not a torch.save zip?): " + e.what_without_backtrace());
  }
}

std::vector<std::pair<std::string, at::Tensor>> state_dict_entries(const PyValue& value,
                                                                   const std::string& path) {
  if (value.kind != PyValue::Kind::kDict) {
    throw_input_error("torch.save file '" + path + "' does not hold a dict (state dict)");
  }
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& [k, v] : *value.entries) {
    if (k->kind != PyValue::Kind::kString || v->kind != PyValue::Kind::kTensor) {
      throw_input_error("torch.save file '" + path + "': entry '" + k->s +
                        "' is not a tensor under a string key");
    }
    out.emplace_back(k->s, v->tensor);
  }
  return out;
}

}  // namespace masr::models
