// tests/cli/test_models_cli.cpp
// `mamba-asr train FILE --dry-run` on every shipped hparams file builds the models and prints the
// parameter count of the `model` ModuleList (CNN + TransformerASR + heads) and of the LM.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

struct Result {
  int code = -1;
  std::string output;  // stdout and stderr together
};

Result run(const std::string& args) {
  const std::string command = std::string(MASR_EXE) + " " + args + " 2>&1";
  Result result;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buffer{};
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

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
