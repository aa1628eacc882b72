// tests/models/test_upstream_parity.cpp
// Checkpoints written by the upstream code itself (tests/fixtures/upstream, made by
// tests/models/make_upstream_fixtures.py from Mamba-ASR's modules and SpeechBrain v1.0.0 on the
// CPU): imported with `mamba-asr import`'s library calls, each model reproduces the upstream
// outputs for the same waveform decoded alone: CTC log-probabilities, decoder log-probabilities
// for a fixed prefix, language-model logits, all within 1e-4.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../text/text_corpus.h"
#include "models/asr_model.h"
#include "models/lm_model.h"
#include "models/torch_save_reader.h"

namespace {

namespace fs = std::filesystem;
using masr::models::PyValue;

struct Fixture {
  std::string folder, hparams;
  std::vector<std::pair<std::string, std::string>> overrides;
  std::shared_ptr<PyValue> expected;
  at::Tensor tensor(const std::string& key) const {
    const PyValue* v = expected->find(key);
    if (v == nullptr || v->kind != PyValue::Kind::kTensor) FAIL("expected.pt has no tensor " << key);
    return v->tensor;
  }
};

Fixture fixture(const std::string& name) {
  Fixture f;
  f.folder = std::string(MASR_TEST_FIXTURES) + "/upstream/" + name;
  std::ifstream in(f.folder + "/overrides.json");
  REQUIRE(in);
  const nlohmann::json j = nlohmann::json::parse(in);
  f.hparams = std::string(MASR_SOURCE_DIR) + "/" + j["hparams"].get<std::string>();
  for (const auto& [key, value] : j["overrides"].items()) f.overrides.emplace_back(key, value.dump());
  f.expected = masr::models::read_torch_save(f.folder + "/expected.pt");
  return f;
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

}  // namespace

TEST_CASE("upstream parity: ConMamba CTC and ConMamba + Transformer decoder", "[checkpoint]") {
  for (const char* name : {"conmamba_ctc", "conmamba_s2s"}) {
    const Fixture f = fixture(name);
    const auto model = masr::models::AsrModel::import_speechbrain(f.folder, f.hparams, f.overrides);
    torch::NoGradGuard no_grad;
    for (int i = 0; i < 2; ++i) {
      INFO(name << ", waveform " << i);
      const at::Tensor feats = model->features(f.tensor("wav" + std::to_string(i)), {}, 1);
      const masr::models::Encoded enc = model->encode(feats);
      CHECK(max_abs_diff(model->ctc_log_probs(enc.out), f.tensor("p_ctc" + std::to_string(i))) <
            1e-4);
      if (model->is_s2s()) {
        const at::Tensor p_seq = model->decoder_log_probs(enc.out, enc.lengths, f.tensor("prefix"));
        CHECK(max_abs_diff(p_seq, f.tensor("p_seq" + std::to_string(i))) < 1e-4);
      }
    }
  }
}

TEST_CASE("upstream parity: SpeechBrain TransformerLM", "[checkpoint]") {
  const Fixture f = fixture("transformer_lm");
  const auto lm = masr::models::LmModel::import_speechbrain(f.folder + "/model.ckpt", f.hparams,
                                                            f.overrides);
  torch::NoGradGuard no_grad;
  CHECK(max_abs_diff(lm->lm()->forward(f.tensor("prefix"), lm->pad_index()),
                     f.tensor("lm_logits")) < 1e-4);
}

TEST_CASE("mamba-asr import: model files that decode takes, and clear errors", "[checkpoint]") {
  masr::testing::TempDir dir("import_cli");
  const std::string exe = std::string(MASR_BINARY_DIR) + "/bin/mamba-asr";
  const Fixture s2s = fixture("conmamba_s2s");
  const Fixture lm = fixture("transformer_lm");
  std::string overrides;
  for (const auto& [k, v] : s2s.overrides) overrides += " --" + k + " " + v;
  const std::string ok = exe + " import " + s2s.folder + " --hparams " + s2s.hparams + overrides +
                         " --out " + dir.file("s2s.masr") + " > " + dir.file("out.txt") + " 2>&1";
  REQUIRE(std::system(ok.c_str()) == 0);
  const auto model = masr::models::AsrModel::load(dir.file("s2s.masr"));
  CHECK(model->is_s2s());
  const std::string ok_lm = exe + " import --lm-ckpt " + lm.folder + "/model.ckpt --lm-hparams " +
                            lm.hparams + " --d_model=32 --lm-out " + dir.file("lm.masr") + " > " +
                            dir.file("out_lm.txt") + " 2>&1";
  REQUIRE(std::system(ok_lm.c_str()) == 0);
  CHECK(masr::models::LmModel::load(dir.file("lm.masr"))->vocab_size() == 31);

  auto fails = [&](const std::string& args, const std::string& message) {
    const std::string cmd = exe + " import " + args + " > " + dir.file("err.txt") + " 2>&1";
    const int status = std::system(cmd.c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) != 0);
    std::ifstream in(dir.file("err.txt"));
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK_THAT(text, Catch::Contains(message));
  };
  fails("", "give a checkpoint folder");
  fails(s2s.folder + " --out x.masr", "needs the hparams file");
  fails(dir.file("nowhere") + " --hparams " + s2s.hparams + " --out x.masr", "does not exist");
  // The S2S checkpoint against the hparams without the overrides (two decoder layers, not one):
  // the keys it lacks are listed.
  fails(s2s.folder + " --hparams " + s2s.hparams + " --out x.masr",
        "missing keys: Transformer.decoder.layers.1.");
  fails("--lm-ckpt " + lm.folder + "/model.ckpt --lm-out x.masr", "--lm-hparams");
}
