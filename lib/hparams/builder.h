// lib/hparams/builder.h
// HyperPyYAML's second pass: turns the resolved Node tree into Values, building `!new:` objects,
// `!name:` factories and running `!apply:` functions through the registry. Internal.
#pragma once

#include <vector>

#include "hparams/hparams.h"
#include "hparams/node.h"

namespace masr::hparams {

Value build_values(const NodePtr& root, const Registry& registry,
                   std::vector<BuiltObject>& objects);

}  // namespace masr::hparams
