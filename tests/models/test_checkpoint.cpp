// tests/models/test_checkpoint.cpp
// AsrModel from hparams, the model file: bit-exact round trips, every error class with its message,
// state/hparams mismatches, checkpoint averaging.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "../text/text_corpus.h"
#include "core/error.h"
#include "hparams/hparams.h"
#include "models/asr_model.h"
#include "models/checkpoint.h"
#include "toolkit/registration.h"
#include "text/tokenizer.h"
#include "tiny_asr.h"

namespace {

using masr::models::AsrModel;
using masr::testing::build;
using masr::testing::tiny_yaml;

// Trains the normalization statistics on one batch, so they are part of what is saved.
void fill_statistics(AsrModel& model) {
  torch::manual_seed(3);
  model.features(torch::randn({2, 8000}) * 0.1, torch::tensor({1.0, 0.75}), 1, true);
}

struct Outputs {
  at::Tensor feats, enc, lens, ctc, dec;
};

Outputs run(AsrModel& model) {
  model.eval();
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  const at::Tensor wavs = torch::randn({2, 6400}) * 0.1;
  const at::Tensor rel = torch::tensor({1.0, 0.6});
  Outputs o;
  o.feats = model.features(wavs, rel);
  auto e = model.encode(o.feats, rel);
  o.enc = e.out;
  o.lens = e.lengths;
  o.ctc = model.ctc_log_probs(e.out);
  if (model.is_s2s()) {
    o.dec = model.decoder_log_probs(e.out, e.lengths, torch::tensor({{1, 5, 6}, {1, 7, 0}}));
  }
  return o;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("AsrModel from hparams: shapes of features, encoder, CTC and decoder", "[checkpoint]") {
  auto model = build(tiny_yaml(1));
  CHECK(model->model_type() == "s2s");
  CHECK(model->vocab_size() == 31);
  CHECK(model->bos_index() == 1);
  CHECK(model->eos_index() == 2);
  fill_statistics(*model);
  CHECK(model->normalize().count() == 1);
  const Outputs o = run(*model);
  CHECK(o.feats.sizes() == torch::IntArrayRef({2, 41, 80}));  // 1 + 6400 / 160
  CHECK(o.enc.sizes() == torch::IntArrayRef({2, 11, 32}));    // 41 -> 21 -> 11
  CHECK(o.lens[0].item<int64_t>() == 11);
  CHECK(o.lens[1].item<int64_t>() == 7);  // round(0.6 * 11) = round(6.6)
  CHECK(o.ctc.sizes() == torch::IntArrayRef({2, 11, 31}));
  CHECK(o.dec.sizes() == torch::IntArrayRef({2, 3, 31}));
  // log-probabilities: each row sums to one
  CHECK(o.ctc.exp().sum(-1).sub(1).abs().max().item<double>() < 1e-5);

  auto ctc = build(tiny_yaml(0));
  CHECK(ctc->model_type() == "ctc");
  CHECK(ctc->seq_lin() == nullptr);
  fill_statistics(*ctc);
  const Outputs c = run(*ctc);
  CHECK_THROWS_WITH(ctc->decoder_log_probs(c.enc, c.lens, torch::ones({2, 1}, torch::kLong)),
                    Catch::Contains("has no attention decoder"));
}

TEST_CASE("AsrModel from hparams names missing keys and mismatched heads", "[checkpoint]") {
  masr::toolkit::register_all();
  std::string yaml = tiny_yaml(1);
  const auto without_seq = yaml.substr(0, yaml.find("seq_lin:"));
  CHECK_THROWS_WITH(AsrModel::from_hparams(masr::hparams::load_text(without_seq, {}, "t.yaml")),
                    Catch::Contains("needs 'seq_lin'"));
  std::string bad_head = yaml;
  bad_head.replace(bad_head.rfind("n_neurons: 31"), 13, "n_neurons: 30");
  CHECK_THROWS_WITH(AsrModel::from_hparams(masr::hparams::load_text(bad_head, {}, "t.yaml")),
                    Catch::Contains("seq_lin has 30 outputs but ctc_lin has 31"));
  CHECK_THROWS_WITH(
      AsrModel::from_hparams(masr::hparams::load_text("bos_index: 1\n", {}, "t.yaml")),
      Catch::Contains("needs 'compute_features'"));
}

TEST_CASE("model file round trip is bit-exact, tokenizer included", "[checkpoint]") {
  masr::testing::TempDir dir("ckpt_roundtrip");
  auto model = build(tiny_yaml(1));
  fill_statistics(*model);
  masr::text::TokenizerTrainOptions options;
  options.model_type = "char";
  auto tok = std::make_shared<const masr::text::Tokenizer>(masr::text::Tokenizer::train(
      masr::testing::librispeech_like_sentences(200), dir.file("31_char"), options));
  model->set_tokenizer(tok);
  const std::string path = dir.file("model.masr");
  model->save(path);
  auto loaded = AsrModel::load(path);

  CHECK(loaded->model_type() == "s2s");
  CHECK(loaded->hparams_yaml() == model->hparams_yaml());
  const auto a = model->named_state();
  const auto b = loaded->named_state();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.dtype() == b[i].second.dtype());
    CHECK(torch::equal(a[i].second, b[i].second));
  }
  CHECK(loaded->normalize().count() == 1);
  REQUIRE(loaded->tokenizer() != nullptr);
  CHECK(loaded->tokenizer()->encode("THE FOX") == tok->encode("THE FOX"));

  const Outputs x = run(*model);
  const Outputs y = run(*loaded);
  CHECK(torch::equal(x.feats, y.feats));
  CHECK(torch::equal(x.enc, y.enc));
  CHECK(torch::equal(x.lens, y.lens));
  CHECK(torch::equal(x.ctc, y.ctc));
  CHECK(torch::equal(x.dec, y.dec));
  // Saving again over the same path replaces it atomically and leaves no temporary file.
  loaded->save(path);
  CHECK(torch::equal(run(*AsrModel::load(path)).dec, x.dec));
  size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.str())) ++files;
  CHECK(files == 3);  // model.masr, 31_char.model, 31_char.vocab
}

TEST_CASE("model file errors: missing, not a model, truncated, corrupt, version", "[checkpoint]") {
  masr::testing::TempDir dir("ckpt_errors");
  auto model = build(tiny_yaml(0));
  fill_statistics(*model);
  const std::string good = dir.file("good.masr");
  model->save(good);
  const std::string bytes = file_bytes(good);
  const std::string bad = dir.file("bad.masr");

  try {
    AsrModel::load(dir.file("absent.masr"));
    FAIL("no error");
  } catch (const masr::Error& e) {
    CHECK(e.kind() == masr::ErrorKind::kIo);
    CHECK_THAT(e.what(), Catch::Contains("absent.masr") && Catch::Contains("does not exist"));
  }
  write_bytes(bad, "hello world, not a model at all");
  CHECK_THROWS_WITH(AsrModel::load(bad), Catch::Contains("not a mamba-asr model"));
  write_bytes(bad, bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_WITH(AsrModel::load(bad),
                    Catch::Contains("bad.masr") && Catch::Contains("truncated"));
  write_bytes(bad, bytes.substr(0, 10));
  CHECK_THROWS_WITH(AsrModel::load(bad), Catch::Contains("truncated"));
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x20;
  write_bytes(bad, flipped);
  CHECK_THROWS_WITH(AsrModel::load(bad), Catch::Contains("corrupt: the checksum does not match"));
  std::string version = bytes;
  version[8] = 7;
  write_bytes(bad, version);
  CHECK_THROWS_WITH(AsrModel::load(bad), Catch::Contains("format version 7 is not supported"));
}

TEST_CASE("model file whose state does not fit its hparams names key and shapes", "[checkpoint]") {
  masr::testing::TempDir dir("ckpt_mismatch");
  auto model = build(tiny_yaml(0));
  fill_statistics(*model);
  auto wider = build(tiny_yaml(0, 48));
  const std::string path = dir.file("m.masr");

  masr::models::CheckpointData data;
  data.model_type = "ctc";
  data.hparams_yaml = wider->hparams_yaml();  // d_model 48 hparams, d_model 32 tensors
  data.state = model->named_state();
  masr::models::write_checkpoint(path, data);
  CHECK_THROWS_WITH(AsrModel::load(path),
                    Catch::Contains("m.masr") && Catch::Contains("'Transformer.") &&
                        Catch::Contains("has shape (") &&
                        Catch::Contains("but the model built from the hparams has ("));

  data.hparams_yaml = model->hparams_yaml();
  data.state.erase(data.state.begin() + 1);
  const std::string dropped = model->named_state()[1].first;
  masr::models::write_checkpoint(path, data);
  CHECK_THROWS_WITH(AsrModel::load(path), Catch::Contains("missing keys: " + dropped));

  data.state = model->named_state();
  data.state.emplace_back("Transformer.extra.weight", torch::zeros({2}));
  masr::models::write_checkpoint(path, data);
  CHECK_THROWS_WITH(AsrModel::load(path), Catch::Contains("unexpected keys: Transformer.extra"));

  data.state = model->named_state();
  data.model_type = "s2s";
  masr::models::write_checkpoint(path, data);
  CHECK_THROWS_WITH(AsrModel::load(path), Catch::Contains("its hparams build a 'ctc' model"));
}

TEST_CASE("average_checkpoints is the element-wise mean; statistics from the first",
          "[checkpoint]") {
  masr::testing::TempDir dir("ckpt_average");
  std::vector<std::shared_ptr<AsrModel>> models;
  std::vector<std::string> paths;
  for (uint64_t seed : {1, 2, 3}) {
    models.push_back(build(tiny_yaml(1), seed));
    fill_statistics(*models.back());
    if (seed == 2)
      models.back()->normalize().set_statistics(9, torch::ones({80}), torch::ones({80}));
    paths.push_back(dir.file("m" + std::to_string(seed) + ".masr"));
    models.back()->save(paths.back());
  }
  auto mean = masr::models::average_checkpoints(paths);
  const auto s0 = models[0]->named_state(), s1 = models[1]->named_state(),
             s2 = models[2]->named_state(), m = mean->named_state();
  for (size_t i = 0; i < m.size(); ++i) {
    INFO(m[i].first);
    if (m[i].first.rfind("normalize.", 0) == 0) {
      CHECK(torch::equal(m[i].second, s0[i].second));
    } else {
      const at::Tensor expected =
          (s0[i].second.to(torch::kDouble) + s1[i].second.to(torch::kDouble) +
           s2[i].second.to(torch::kDouble)) /
          3.0;
      CHECK(torch::allclose(m[i].second.to(torch::kDouble), expected, 0, 1e-6));
    }
  }
  CHECK(mean->normalize().count() == 1);
  CHECK_THROWS_WITH(masr::models::average_checkpoints({}), Catch::Contains("no checkpoints"));
}

TEST_CASE("convert_weights: float16 storage halves the file and loads as the rounded weights",
          "[checkpoint]") {
  masr::testing::TempDir dir("ckpt_convert");
  auto model = build(tiny_yaml(1), 5);
  fill_statistics(*model);
  const std::string path = dir.file("model.masr");
  model->save(path);

  const auto half = masr::models::convert_weights(path, dir.file("half.masr"), at::kHalf);
  const auto loaded = AsrModel::load(dir.file("half.masr"));
  const auto a = model->named_state();
  const auto b = loaded->named_state();
  REQUIRE(a.size() == b.size());
  int64_t floating = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(b[i].second.dtype() == a[i].second.dtype());  // loaded back into the model's own types
    const bool statistics = a[i].first.rfind("normalize.", 0) == 0;
    if (statistics || !a[i].second.is_floating_point()) {
      CHECK(torch::equal(a[i].second, b[i].second));  // kept exactly
    } else {
      ++floating;
      // Exactly the float32 weights rounded to float16 (round to nearest even), and back.
      CHECK(torch::equal(b[i].second, a[i].second.to(at::kHalf).to(at::kFloat)));
    }
  }
  CHECK(half.converted == floating);
  CHECK(half.kept == static_cast<int64_t>(a.size()) - floating);
  CHECK(half.bytes_in == std::filesystem::file_size(path));
  CHECK(half.bytes_out == std::filesystem::file_size(dir.file("half.masr")));
  // The weights are most of the file: float16 storage takes 50-60 % of its size.
  CHECK(half.bytes_out < half.bytes_in * 0.6);
  CHECK(half.bytes_out > half.bytes_in * 0.5 - 2048);

  // Outputs stay close: float16 weights differ by at most 2^-11 relative.
  const Outputs x = run(*model);
  const Outputs y = run(*loaded);
  CHECK(torch::equal(x.feats, y.feats));  // the front end has no weights before normalization
  CHECK(torch::allclose(x.ctc, y.ctc, 0, 5e-2));
  CHECK((x.ctc - y.ctc).abs().max().item<double>() > 0.0);  // the rounding did change them

  // Back to float32: the same (rounded) weights, float32 storage; in place over its input.
  const auto back = masr::models::convert_weights(dir.file("half.masr"), dir.file("half.masr"),
                                                  at::kFloat);
  CHECK(back.bytes_out > back.bytes_in);
  const auto again = AsrModel::load(dir.file("half.masr"));
  const auto c = again->named_state();
  for (size_t i = 0; i < c.size(); ++i) CHECK(torch::equal(c[i].second, b[i].second));

  CHECK_THROWS_WITH(masr::models::convert_weights(dir.file("missing.masr"), dir.file("x.masr"),
                                                  at::kHalf),
                    Catch::Contains("missing.masr"));
  CHECK_FALSE(std::filesystem::exists(dir.file("x.masr")));
}
