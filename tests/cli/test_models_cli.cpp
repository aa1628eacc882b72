// tests/cli/test_models_cli.cpp
// `mamba-asr train FILE --dry-run` on every shipped hparams file builds the models and prints the
// parameter count of the `model` ModuleList (CNN + TransformerASR + heads) and of the LM.
#include "run_cli.h"

#include <array>
#include <cstdio>
#include <string>

namespace {

using Result = masr::testing::CliResult;

Result run(const std::string& args) { return masr::testing::run_cli(args); }

void check_count(const std::string& file, const std::string& key, const std::string& cls,
                 const std::string& count) {
  const Result r = run("train " + std::string(MASR_SOURCE_DIR) + "/hparams/" + file +
                       " --data_folder x --dry-run");
  INFO(file << ":\n" << r.output.substr(r.output.size() > 4000 ? r.output.size() - 4000 : 0));
  CHECK(r.code == 0);
  CHECK_THAT(r.output,
             Catch::Contains("  " + key + ": " + cls + " [built]  " + count + " parameters"));
}

const std::string kList = "torch.nn.ModuleList";
const std::string kLM = "speechbrain.lobes.models.transformer.TransformerLM.TransformerLM";

}  // namespace

TEST_CASE("dry-run prints the ConMamba and Conformer CTC model sizes", "[cli][models]") {
  check_count("CTC/conmamba_large.yaml", "model", kList, "31,555,519");
  check_count("CTC/conformer_large.yaml", "model", kList, "28,786,111");
  check_count("CTC/conmamba_tiny.yaml", "model", kList, "313,023");
}

TEST_CASE("dry-run prints the small S2S model sizes", "[cli][models]") {
  check_count("S2S/conmamba_small.yaml", "model", kList, "14,075,520");
  check_count("S2S/conmambamamba_small.yaml", "model", kList, "14,570,880");
  check_count("S2S/conformer_small.yaml", "model", kList, "13,327,296");
  check_count("S2S/conmamba_tiny.yaml", "model", kList, "464,040");
}

TEST_CASE("dry-run prints the large S2S model sizes", "[cli][models]") {
  check_count("S2S/conmamba_large.yaml", "model", kList, "115,187,888");
  check_count("S2S/conmambamamba_large.yaml", "model", kList, "122,917,040");
  check_count("S2S/conformer_large.yaml", "model", kList, "109,136,048");
  check_count("S2S/conmamba_large.yaml", "lm_model", kLM, "93,333,128");
}

TEST_CASE("dry-run prints the TransformerLM size", "[cli][models]") {
  check_count("LM/transformer.yaml", "model", kLM, "93,333,128");
}

TEST_CASE("a model configuration error names the file and the argument", "[cli][models]") {
  const Result r = run("train " + std::string(MASR_SOURCE_DIR) +
                       "/hparams/CTC/conformer_large.yaml --data_folder x --nhead 5 --dry-run");
  CHECK(r.code != 0);
  CHECK_THAT(r.output, Catch::Contains("conformer_large.yaml"));
  CHECK_THAT(r.output, Catch::Contains("key 'Transformer'"));
  CHECK_THAT(r.output, Catch::Contains("d_model 256 must be divisible by nhead 5"));
}
