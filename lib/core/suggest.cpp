// lib/core/suggest.cpp
#include "core/suggest.h"

#include <algorithm>

namespace masr {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const size_t substitution = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, substitution});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> closest_matches(const std::string& name,
                                         const std::vector<std::string>& candidates, size_t count) {
  // Accept up to a third of the name's length in edits (at least 2), so unrelated names stay out.
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& candidate : candidates) {
    const size_t d = edit_distance(name, candidate);
    if (d <= limit) scored.emplace_back(d, candidate);
  }
  std::sort(scored.begin(), scored.end());
  // Only the closest: '--bem' suggests '--beam', not also '--lm' two edits away.
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && out.size() < count; ++i) {
    if (scored[i].first > scored.front().first) break;
    out.push_back(scored[i].second);
  }
  return out;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
  const auto close = closest_matches(name, candidates);
  if (close.empty()) return "";
  std::string out = " Did you mean ";
  for (size_t i = 0; i < close.size(); ++i) out += (i ? " or '" : "'") + close[i] + "'";
  return out + "?";
}

}  // namespace masr
