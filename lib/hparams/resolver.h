// lib/hparams/resolver.h
// HyperPyYAML's first pass on the Node tree: command-line overrides, `!include:`, `!ref` (with
// string interpolation and arithmetic), `!copy` and `!PLACEHOLDER`. Internal to the engine.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hparams/node.h"

namespace masr::hparams {

// SpeechBrain's recursive_update: mappings merge key by key, anything else is replaced. With
// `must_match`, a top-level override naming no key of `target` is an error (as SpeechBrain).
void apply_overrides(const NodePtr& target, const NodePtr& overrides, bool must_match,
                     const std::string& target_name);

// Resolves every reference in `root` in place. `base_dir` anchors relative `!include:` paths;
// `overrides` (may be null) are passed on to included files; `include_stack` detects include
// cycles. A `!PLACEHOLDER` (here or in an included file) becomes the string `placeholder_value`
// when that is set, and is an error otherwise.
// `refers_to` (may be null) gets, for each top-level key of `root`, the top-level keys its
// references name (`a: !ref <b[c]>` adds b to a's set); included files' own references are not
// recorded.
void resolve_references(const NodePtr& root, const std::string& base_dir, const NodePtr& overrides,
                        std::vector<std::string>& include_stack,
                        const std::optional<std::string>& placeholder_value = std::nullopt,
                        std::map<std::string, std::set<std::string>>* refers_to = nullptr);

}  // namespace masr::hparams
