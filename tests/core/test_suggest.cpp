// tests/core/test_suggest.cpp
#include <catch2/catch.hpp>

#include "core/suggest.h"

TEST_CASE("edit distance counts insertions, deletions and substitutions", "[core]") {
  CHECK(masr::edit_distance("", "") == 0);
  CHECK(masr::edit_distance("kitten", "sitting") == 3);
  CHECK(masr::edit_distance("d_model", "d_modle") == 2);
  CHECK(masr::edit_distance("abc", "") == 3);
}

TEST_CASE("did_you_mean proposes close names and nothing for unrelated ones", "[core]") {
  const std::vector<std::string> keys = {"d_model", "d_ffn", "nhead", "num_encoder_layers"};
  CHECK(masr::did_you_mean("d_modle", keys) == " Did you mean 'd_model'?");
  CHECK(masr::did_you_mean("zzzzzzzz", keys).empty());
  CHECK(masr::closest_matches("nheads", keys) == std::vector<std::string>{"nhead"});
  // Ties at the smallest distance are all kept; farther ones are not.
  CHECK(masr::closest_matches("--bem", {"--beam", "--lm", "--ref", "--bes"}) ==
        std::vector<std::string>{"--beam", "--bes"});
}
