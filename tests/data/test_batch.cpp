// tests/data/test_batch.cpp
// PaddedBatch semantics: zero padding on the right, float32 relative lengths.
#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include "data/batch.h"

using namespace masr::data;

TEST_CASE("pad_right pads with zeros and gives relative lengths", "[data]") {
  const auto padded = pad_right(
      {at::tensor({1.0f, 2.0f, 3.0f, 4.0f}), at::tensor({5.0f}), at::tensor({6.0f, 7.0f})});
  CHECK(padded.data.sizes() == at::IntArrayRef({3, 4}));
  CHECK(padded.data.equal(
      at::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 0.f, 0.f, 0.f, 6.f, 7.f, 0.f, 0.f}).reshape({3, 4})));
  CHECK(padded.lengths.scalar_type() == at::kFloat);
  CHECK(padded.lengths.equal(at::tensor({1.0f, 0.25f, 0.5f})));
  CHECK(absolute_lengths(padded.lengths, 4) == std::vector<int64_t>{4, 1, 2});

  // (T, F) features: only T may differ.
  const auto feats = pad_right({at::ones({2, 3}), at::ones({5, 3})});
  CHECK(feats.data.sizes() == at::IntArrayRef({2, 5, 3}));
  CHECK(feats.data[0].sum().item<float>() == 6.0f);
  CHECK(feats.lengths[0].item<float>() == Approx(0.4f));
}

TEST_CASE("pad_sequences for token ids", "[data]") {
  const auto tokens = pad_sequences({{5, 6, 7}, {}, {8}});
  CHECK(tokens.data.scalar_type() == at::kLong);
  CHECK(tokens.data.equal(at::tensor({5, 6, 7, 0, 0, 0, 8, 0, 0}, at::kLong).reshape({3, 3})));
  CHECK(tokens.lengths.equal(at::tensor({1.0f, 0.0f, 1.0f / 3.0f})));
}

TEST_CASE("pad_right rejects mismatched items", "[data]") {
  CHECK_THROWS_WITH(pad_right({}), Catch::Contains("empty batch"));
  CHECK_THROWS_WITH(pad_right({at::ones({2, 3}), at::ones({2, 4})}),
                    Catch::Contains("batch item 1 has shape [2, 4]") &&
                        Catch::Contains("differ only in their first dimension"));
  CHECK_THROWS_WITH(pad_right({at::ones({2}), at::ones({2}, at::kLong)}),
                    Catch::Contains("batch item 1") && Catch::Contains("Long"));
  CHECK_THROWS_WITH(pad_right({at::scalar_tensor(1.0)}), Catch::Contains("scalars"));
}

TEST_CASE("pad_right to a longer padded length keeps exact absolute lengths", "[data]") {
  const auto padded = pad_right({at::tensor({1.0f, 2.0f, 3.0f}), at::tensor({4.0f})}, 0.0, 7);
  CHECK(padded.data.sizes() == at::IntArrayRef({2, 7}));
  CHECK(padded.data[0].narrow(0, 3, 4).abs().sum().item<float>() == 0.0f);
  CHECK(absolute_lengths(padded.lengths, 7) == std::vector<int64_t>{3, 1});
  // A padded length below the longest item changes nothing.
  CHECK(pad_right({at::ones({5})}, 0.0, 2).data.size(1) == 5);
  // Audio-sized lengths: round(rel * padded) gives each length back for every length up to
  // 40 s at 16 kHz padded to its grid length (float32 relative lengths, as SpeechBrain keeps).
  for (int64_t n = 1000; n <= 640000; n += 997) {
    const int64_t g = grid_length(n, 640, 1.02);
    const float rel = static_cast<float>(static_cast<double>(n) / static_cast<double>(g));
    REQUIRE(std::llround(static_cast<double>(rel) * static_cast<double>(g)) == n);
  }
}

TEST_CASE("grid_length: few distinct lengths, each at most about the ratio above", "[data]") {
  // Brute force over every length: the grid value is a multiple of the quantum, >= n, the
  // smallest grid value that is (the map is monotone), and within the ratio (plus two quanta) of n.
  int64_t previous = 0;
  std::vector<int64_t> distinct;
  for (int64_t n = 1; n <= 48000; ++n) {
    const int64_t g = grid_length(n, 640, 1.02);
    REQUIRE(g % 640 == 0);
    REQUIRE(g >= n);
    REQUIRE(g >= previous);
    REQUIRE(static_cast<double>(g) <= 1.02 * static_cast<double>(n) + 2 * 640.0);
    if (g != previous) distinct.push_back(g);
    previous = g;
  }
  // 3 s of 16 kHz audio: 75 units of 40 ms; the linear part runs to 50 units, then 2 % steps.
  CHECK(distinct.size() < 75);
  CHECK(distinct.size() > 50);
  CHECK(grid_length(0, 8, 1.1) == 8);
  CHECK(grid_length(8, 8, 1.1) == 8);
  CHECK(grid_length(9, 8, 1.1) == 16);
  CHECK(grid_length(81, 8, 1.1) == 88);   // 10 units, then ceil(10 * 1.1) = 11
  CHECK(grid_length(89, 8, 1.1) == 104);  // 11 -> ceil(12.1) = 13 units
  CHECK_THROWS(grid_length(5, 0, 1.1));
  CHECK_THROWS(grid_length(5, 8, 1.0));
}
