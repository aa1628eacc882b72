// lib/hparams/registry.cpp
#include "hparams/registry.h"

#include <algorithm>

#include "core/error.h"
#include "core/suggest.h"

namespace masr::hparams {
namespace {

std::string last_part(const std::string& dotted) {
  const size_t dot = dotted.rfind('.');
  return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

const Value* Args::find(const std::string& name) const {
  for (const auto& [k, v] : named) {
    if (k == name) return &v;
  }
  return nullptr;
}

const Value& Args::get(const std::string& name) const {
  const Value* v = find(name);
  if (v == nullptr)
    throw_config_error("hparams: " + origin() + " needs the argument '" + name + "'");
  return *v;
}

bool Args::get_bool(const std::string& name, bool fallback) const {
  const Value* v = find(name);
  return v ? v->as_bool() : fallback;
}

int64_t Args::get_int(const std::string& name, int64_t fallback) const {
  const Value* v = find(name);
  return v ? v->as_int() : fallback;
}

double Args::get_double(const std::string& name, double fallback) const {
  const Value* v = find(name);
  return v ? v->as_double() : fallback;
}

std::string Args::get_string(const std::string& name, const std::string& fallback) const {
  const Value* v = find(name);
  return v ? v->as_string() : fallback;
}

std::string Args::origin() const {
  std::string out = callee.empty() ? "an object" : "'" + callee + "'";
  if (!key.empty()) out += " at key '" + key + "'";
  if (!where.file.empty()) out += " (" + where.str() + ")";
  return out;
}

Registry& Registry::global() {
  static Registry* registry = [] {
    auto* r = new Registry();
    register_builtin_classes(*r);
    return r;
  }();
  return *registry;
}

void Registry::add(ClassInfo info) {
  auto owned = std::make_unique<ClassInfo>(std::move(info));
  const ClassInfo* raw = owned.get();
  auto existing = classes_.find(raw->name);
  if (existing != classes_.end()) {
    // Replacing a declaration by an implementation: drop the old aliases first.
    for (auto it = by_name_.begin(); it != by_name_.end();) {
      it = it->second == existing->second.get() ? by_name_.erase(it) : std::next(it);
    }
  }
  by_name_[raw->name] = raw;
  for (const auto& alias : raw->aliases) by_name_[alias] = raw;
  classes_[raw->name] = std::move(owned);
}

void Registry::implement(const std::string& name,
                         std::function<std::shared_ptr<Object>(const Args&)> build) {
  const ClassInfo* declared = find(name);
  if (declared == nullptr) {
    throw Error(ErrorKind::kInternal, "registry: '" + name + "' is implemented but never declared");
  }
  ClassInfo info = *declared;
  info.build = std::move(build);
  add(std::move(info));
}

const ClassInfo* Registry::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> Registry::closest(const std::string& name, size_t count) const {
  std::vector<std::pair<size_t, std::string>> scored;
  const std::string tail = last_part(name);
  for (const auto& entry : by_name_) {
    const size_t full = edit_distance(name, entry.first);
    const size_t part = edit_distance(tail, last_part(entry.first)) * 2;
    scored.emplace_back(std::min(full, part), entry.first);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < count; ++i) out.push_back(scored[i].second);
  return out;
}

std::vector<const ClassInfo*> Registry::all() const {
  std::vector<const ClassInfo*> out;
  for (const auto& entry : classes_) out.push_back(entry.second.get());
  return out;
}

void bind_arguments(const ClassInfo& info, Args& args, bool binding) {
  args.named.clear();
  auto is_param = [&](const std::string& name) {
    return std::find(info.params.begin(), info.params.end(), name) != info.params.end();
  };
  if (args.positional.size() > info.params.size()) {
    throw_config_error("hparams: " + args.origin() + " takes at most " +
                       std::to_string(info.params.size()) + " positional argument(s) (" +
                       join(info.params) + "), but " + std::to_string(args.positional.size()) +
                       " were given");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) {
    args.named.emplace_back(info.params[i], args.positional[i]);
  }
  for (const auto& [name, value] : args.keywords) {
    if (!is_param(name) && !info.variadic) {
      const std::string hint = did_you_mean(name, info.params);
      throw_config_error("hparams: " + args.origin() + " got an unknown argument '" + name + "'." +
                         hint + " It accepts: " + join(info.params));
    }
    if (args.find(name) != nullptr) {
      throw_config_error("hparams: " + args.origin() + " got the argument '" + name + "' twice");
    }
    args.named.emplace_back(name, value);
  }
  if (!binding) {
    for (const auto& name : info.required) {
      if (args.find(name) == nullptr) {
        throw_config_error("hparams: " + args.origin() + " needs the argument '" + name + "'");
      }
    }
  }
}

}  // namespace masr::hparams
