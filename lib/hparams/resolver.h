// lib/hparams/resolver.h
// HyperPyYAML's first pass on the Node tree: command-line overrides, `!include:`, `!ref` (with
// string interpolation and arithmetic), `!copy` and `!PLACEHOLDER`. Internal to the engine.
#pragma once

#include <optional>
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
void resolve_references(const NodePtr& root, const std::string& base_dir, const NodePtr& overrides,
                        std::vector<std::string>& include_stack,
                        const std::optional<std::string>& placeholder_value = std::nullopt);

}  // namespace masr::hparams
