// lib/hparams/registry.h
// The object registry: maps the dotted names of `!new:`, `!name:` and `!apply:` to C++ factories.
//
// Names are SpeechBrain's and xi-j/Mamba-ASR's (`speechbrain.lobes.features.Fbank`,
// `modules.TransformerASR.TransformerASR`, `torch.optim.AdamW`, ...) plus our own `mamba_asr.*`
// aliases, so upstream hparams files load unmodified. Every class declares the keyword arguments
// it accepts (its Python signature), so a misspelt argument is an error at load time. A class
// without a `build` function is *declared*: its arguments are validated and kept (an Instance
// whose `object` is null), and the subsystem that implements it builds it from those arguments.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hparams/value.h"

namespace masr::hparams {

// Objects built from hparams derive from this, so one Value can hold any of them.
class Object {
 public:
  virtual ~Object() = default;
  // One line for `train --dry-run` (e.g. "115,187,888 parameters"); empty for nothing to say.
  virtual std::string summary() const { return ""; }
};

// Arguments of a `!new:`/`!name:`/`!apply:` node, after validation against the signature.
struct Args {
  std::string callee;      // the name as written in the file
  Location where;          // the node's location
  std::string key;         // the node's key path
  Value::List positional;  // as written
  Value::Map keywords;     // as written
  Value::Map named;        // every given argument by parameter name (positional ones mapped)

  const Value* find(const std::string& name) const;
  const Value& get(const std::string& name) const;  // throws if absent
  bool get_bool(const std::string& name, bool fallback) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::string origin() const;  // "!new:X at file.yaml:12 (key 'CNN')"
};

struct ClassInfo;

// The result of `!new:`: the class, its arguments and, when the class is implemented, the object.
struct Instance {
  std::string key;  // where it is defined: its top-level key when it has one, else its first path
  const ClassInfo* info = nullptr;
  Args args;
  std::shared_ptr<Object> object;  // null for declared classes
};

// The result of `!name:`: a callable with bound arguments (functools.partial).
struct Partial {
  const ClassInfo* info = nullptr;
  Args bound;
};

enum class CallableKind {
  kClass,     // `!new:` builds it; `!name:` makes a factory for it
  kFunction,  // `!name:` binds it; `!apply:` calls it at load time
};

struct ClassInfo {
  std::string name;                  // canonical dotted name
  std::vector<std::string> aliases;  // other accepted names
  CallableKind kind = CallableKind::kClass;
  std::string summary;                // one line, shown by `--dry-run` and in docs
  std::vector<std::string> params;    // keyword names in positional order (the Python signature)
  std::vector<std::string> required;  // params that must be given (when building, not binding)
  bool variadic = false;              // accepts any other keyword (Python **kwargs)
  // Builds the object; empty for declared classes.
  std::function<std::shared_ptr<Object>(const Args&)> build;
  // Runs a function for `!apply:`; empty for functions that can only be bound with `!name:`.
  std::function<Value(const Args&)> apply;

  bool implemented() const { return static_cast<bool>(build) || static_cast<bool>(apply); }
};

class Registry {
 public:
  // The process-wide registry, filled by register_builtin_classes() and by each subsystem's
  // register function (see runtime/registration.h).
  static Registry& global();

  // Adds or replaces (by canonical name) a class; aliases point to it.
  void add(ClassInfo info);
  // Gives a declared class its builder, keeping its names and signature. Naming a class that is
  // not declared is a programming error (an internal Error), not a user's mistake.
  void implement(const std::string& name,
                 std::function<std::shared_ptr<Object>(const Args&)> build);
  const ClassInfo* find(const std::string& name) const;
  // Registered names closest to `name` (edit distance on the full name and on the last part).
  std::vector<std::string> closest(const std::string& name, size_t count = 3) const;
  std::vector<const ClassInfo*> all() const;

 private:
  std::map<std::string, std::unique_ptr<ClassInfo>> classes_;  // by canonical name
  std::map<std::string, const ClassInfo*> by_name_;            // canonical names and aliases
};

// Maps positional and keyword arguments to parameter names and checks them against the signature:
// unknown keywords, too many positionals and duplicates are errors naming the file and line.
// `binding` is true for `!name:` (missing required arguments may come later).
void bind_arguments(const ClassInfo& info, Args& args, bool binding);

// Declares every SpeechBrain / Mamba-ASR / PyTorch name that hparams files use, with its signature.
// Implementations replace these entries as subsystems register their builders.
void register_builtin_classes(Registry& registry);

// `!apply:torch.manual_seed [N]` records N here (the hparams engine does not link LibTorch); the
// runtime seeds every generator from it (runtime/registration.h replaces the entry to seed torch).
void record_manual_seed(int64_t seed);
// The seed `speechbrain.utils.seed_everything(seed)` uses: `seed` itself, or 0 when it is outside
// [0, 2**32 - 1] (SpeechBrain's bound, numpy's).
int64_t seed_everything_value(int64_t seed);
std::optional<int64_t> requested_manual_seed();

}  // namespace masr::hparams
