// lib/core/suggest.h
// "Did you mean ...?" for error messages: the known names closest to a mistyped one.
#pragma once

#include <string>
#include <vector>

namespace masr {

size_t edit_distance(const std::string& a, const std::string& b);

// Up to `count` candidates within a sensible edit distance of `name`, all at the smallest
// distance found.
std::vector<std::string> closest_matches(const std::string& name,
                                         const std::vector<std::string>& candidates,
                                         size_t count = 3);

// " Did you mean 'x'?" (or ", 'y'") when something is close, else "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace masr
