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
