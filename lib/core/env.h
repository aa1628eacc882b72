// lib/core/env.h
// mamba-asr's environment switches (MASR_CUDA_GRAPHS=0, MASR_MEMLOG=1, ...): one reading for all.
#pragma once

#include <cstdlib>
#include <cstring>

namespace masr {

// True when the environment variable `name` is set to exactly `value`. A switch that is on unless
// turned off reads `!env_is(name, "0")`; one that is off unless turned on, `env_is(name, "1")`.
inline bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

}  // namespace masr
