// tests/models/test_speechbrain_import.cpp
// Import of a SpeechBrain/Mamba-ASR CKPT folder written by tests/models/speechbrain_checkpoint.py
// (upstream key names by hand, random values): every tensor lands under the expected name with
// the same value, the CNN front end and CTC head match plain-torch references, and the imported
// model survives a save/load round trip. Also the Python-file reader and import errors.
#include <torch/torch.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../text/text_corpus.h"
#include "core/error.h"
#include "features/npy.h"
#include "models/asr_model.h"
#include "models/torch_save_reader.h"
#include "nn/conv_frontend.h"
#include "nn/wrappers.h"
#include "tiny_asr.h"

namespace {

namespace fs = std::filesystem;
using masr::models::AsrModel;

const char* kModelList =
    "model: !new:torch.nn.ModuleList\n    - [!ref <CNN>, !ref <Transformer>, !ref <ctc_lin>]\n";

// Writes the CKPT folder (d 32, d_ffn 64, 1 layer, d_state 8, 31 tokens) and the hparams.
void write_fixture(const masr::testing::TempDir& dir, const std::string& model_list) {
  const std::string command = std::string("/usr/bin/python3 ") + MASR_SOURCE_DIR +
                              "/tests/models/speechbrain_checkpoint.py " + dir.str() +
                              " 32 64 1 8 31 > " + dir.file("python.log") + " 2>&1";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  std::ofstream(dir.file("hparams.yaml")) << masr::testing::tiny_yaml(0) << model_list;
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

}  // namespace

TEST_CASE("SpeechBrain checkpoint import: every tensor, CNN and CTC outputs, re-export",
          "[checkpoint]") {
  masr::testing::TempDir dir("sb_import");
  write_fixture(dir, kModelList);
  auto model = AsrModel::import_speechbrain(dir.file("ckpt"), dir.file("hparams.yaml"));
  CHECK(model->model_type() == "ctc");
  CHECK_FALSE(model->is_training());

  size_t expected_files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.file("expected"))) {
    ++expected_files;
  }
  const auto state = model->named_state();
  CHECK(state.size() == expected_files);
  for (const auto& [name, tensor] : state) {
    INFO(name);
    const std::string npy = dir.file("expected/" + name + ".npy");
    REQUIRE(fs::exists(npy));
    const at::Tensor want = masr::features::read_npy(npy);
    REQUIRE(tensor.sizes() == want.sizes());
    CHECK(torch::equal(tensor.to(want.scalar_type()), want));
  }
  CHECK(model->normalize().count() == 7);

  // CNN front end (conv layout, reflect padding, LayerNorm over (F, C)) against plain torch.
  torch::NoGradGuard no_grad;
  const at::Tensor cnn = model->cnn().forward(masr::features::read_npy(dir.file("feats.npy")));
  const at::Tensor cnn_ref = masr::features::read_npy(dir.file("cnn_out.npy"));
  REQUIRE(cnn.sizes() == cnn_ref.sizes());
  CHECK(max_abs_diff(cnn, cnn_ref) < 1e-4);
  const at::Tensor ctc = model->ctc_log_probs(masr::features::read_npy(dir.file("enc_in.npy")));
  CHECK(max_abs_diff(ctc, masr::features::read_npy(dir.file("ctc_out.npy"))) < 1e-5);

  // Export to our format and back: same tensors, same encoder output.
  model->save(dir.file("model.masr"));
  auto loaded = AsrModel::load(dir.file("model.masr"));
  const auto again = loaded->named_state();
  REQUIRE(again.size() == state.size());
  for (size_t i = 0; i < state.size(); ++i) CHECK(torch::equal(again[i].second, state[i].second));
  torch::manual_seed(2);
  const at::Tensor wavs = torch::randn({1, 8000}) * 0.1;
  const at::Tensor e1 = model->encode(model->features(wavs)).out;
  const at::Tensor e2 = loaded->encode(loaded->features(wavs)).out;
  CHECK(torch::equal(e1, e2));
}

TEST_CASE("SpeechBrain import errors name the keys and files", "[checkpoint]") {
  masr::testing::TempDir dir("sb_import_errors");
  // A ModuleList without ctc_lin: the checkpoint's `2.` keys have nowhere to go.
  write_fixture(dir, "model: !new:torch.nn.ModuleList\n    - [!ref <CNN>, !ref <Transformer>]\n");
  CHECK_THROWS_WITH(AsrModel::import_speechbrain(dir.file("ckpt"), dir.file("hparams.yaml")),
                    Catch::Contains("keys outside the model's 2 modules: 2.w.weight, 2.w.bias"));
  // hparams with another d_model: the first mismatching key and both shapes.
  std::ofstream(dir.file("wide.yaml")) << masr::testing::tiny_yaml(0, 48) << kModelList;
  CHECK_THROWS_WITH(AsrModel::import_speechbrain(dir.file("ckpt"), dir.file("wide.yaml")),
                    Catch::Contains("'Transformer.") && Catch::Contains("hparams has ("));
  fs::remove(dir.file("ckpt/normalizer.ckpt"));
  CHECK_THROWS_WITH(AsrModel::import_speechbrain(dir.file("ckpt"), dir.file("wide.yaml")),
                    Catch::Contains("normalizer.ckpt") && Catch::Contains("does not exist"));
  CHECK_THROWS_WITH(AsrModel::import_speechbrain(dir.file("nowhere"), dir.file("wide.yaml")),
                    Catch::Contains("'" + dir.file("nowhere") + "' does not exist"));
  std::ofstream(dir.file("junk.ckpt")) << "junk";
  CHECK_THROWS_WITH(masr::models::read_torch_save(dir.file("junk.ckpt")),
                    Catch::Contains("junk.ckpt' cannot be read"));
}
