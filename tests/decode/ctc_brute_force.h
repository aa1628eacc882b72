// tests/decode/ctc_brute_force.h
// The reference the CTC searches are tested against: P(y | x) of every label sequence y, by
// enumerating all V^T alignment paths of a small (T x V) log-probability matrix.
#pragma once

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

namespace masr::testing {

inline std::map<std::vector<int64_t>, double> ctc_sequence_probs(const at::Tensor& logp,
                                                                  int64_t blank = 0) {
  const at::Tensor table = logp.to(at::kDouble).contiguous();
  const auto a = table.accessor<double, 2>();
  const int64_t frames = table.size(0), vocab = table.size(1);
  int64_t paths = 1;
  for (int64_t t = 0; t < frames; ++t) paths *= vocab;
  std::map<std::vector<int64_t>, double> probs;
  for (int64_t code = 0; code < paths; ++code) {
    std::vector<int64_t> labels;
    double lp = 0;
    int64_t previous = -1, rest = code;
    for (int64_t t = 0; t < frames; ++t) {
      const int64_t c = rest % vocab;
      rest /= vocab;
      lp += a[t][c];
      if (c != blank && c != previous) labels.push_back(c);
      previous = c;
    }
    probs[labels] += std::exp(lp);
  }
  return probs;
}

}  // namespace masr::testing
