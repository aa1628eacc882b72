// tests/models/test_upstream_parity.cpp
// Checkpoints written by the upstream code itself (tests/fixtures/upstream, made by
// tests/models/make_upstream_fixtures.py from Mamba-ASR's modules and SpeechBrain v1.0.0 on the
// CPU), one per model family: ConMamba with a CTC head, a Transformer decoder or a Mamba decoder;
// Conformer (SpeechBrain's and Mamba-ASR's); a Transformer encoder; the TransformerLM. Imported
// with `mamba-asr import`'s library calls, each model reproduces the upstream outputs for the
// same waveform decoded alone: CTC log-probabilities, decoder log-probabilities for a fixed
// prefix (whole-prefix and step by step, as the searches run the decoder), language-model
// logits, all within kTolerance. Our joint CTC/attention beam search finds the n-best of
// SpeechBrain's own S2STransformerBeamSearcher (same tokens, scores within kSearchRelTolerance).
// The binary's import writes model files that `decode` takes, and its greedy CTC transcripts are
// the upstream model's argmax paths.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <sndfile.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include "../text/text_corpus.h"
#include "audio/audio_reader.h"
#include "decode/asr_model_recognizer.h"
#include "decode/s2s_beam_search.h"
#include "models/asr_model.h"
#include "models/lm_model.h"
#include "models/torch_save_reader.h"
#include "text/tokenizer.h"

namespace {

namespace fs = std::filesystem;
using masr::models::PyValue;

// The largest |ours - upstream| allowed for any log-probability or logit: float32 arithmetic in a
// different order (fused kernels, another scan) stays well below it; a misplaced weight, a wrong
// mask or a missing scale does not.
constexpr double kTolerance = 1e-4;

// Every ASR family of tests/fixtures/upstream.
const char* const kAsrFamilies[] = {"conmamba_ctc",  "conmamba_s2s",  "conmambamamba_s2s",
                                    "conformer_s2s", "conformer_ctc", "transformer_s2s"};

struct Fixture {
  std::string folder, hparams, kind;
  std::vector<std::pair<std::string, std::string>> overrides;
  std::shared_ptr<PyValue> expected;
  at::Tensor tensor(const std::string& key) const {
    const PyValue* v = expected->find(key);
    if (v == nullptr || v->kind != PyValue::Kind::kTensor)
      FAIL("expected.pt has no tensor " << key);
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
  f.kind = j["kind"].get<std::string>();
  for (const auto& [key, value] : j["overrides"].items())
    f.overrides.emplace_back(key, value.dump());
  f.expected = masr::models::read_torch_save(f.folder + "/expected.pt");
  return f;
}

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

// Imports the fixture `name` and compares, for each of its waveforms decoded alone, our CTC
// log-probabilities and (S2S) decoder log-probabilities for the fixed prefix with upstream's.
void check_asr_parity(const std::string& name) {
  const Fixture f = fixture(name);
  const auto model = masr::models::AsrModel::import_speechbrain(f.folder, f.hparams, f.overrides);
  REQUIRE(model->is_s2s() == (f.kind == "s2s"));
  torch::NoGradGuard no_grad;
  for (int i = 0; i < 2; ++i) {
    INFO(name << ", waveform " << i);
    const at::Tensor feats = model->features(f.tensor("wav" + std::to_string(i)), {}, 1);
    const masr::models::Encoded enc = model->encode(feats);
    CHECK(max_abs_diff(model->ctc_log_probs(enc.out), f.tensor("p_ctc" + std::to_string(i))) <
          kTolerance);
    if (model->is_s2s()) {
      const at::Tensor p_seq = model->decoder_log_probs(enc.out, enc.lengths, f.tensor("prefix"));
      CHECK(max_abs_diff(p_seq, f.tensor("p_seq" + std::to_string(i))) < kTolerance);
      // The searches' incremental decoder (KV caches, stepped Mamba states), one token at a time.
      const at::Tensor prefix = f.tensor("prefix");
      auto state = model->start_decoding(enc.out, enc.lengths, 1);
      for (int64_t t = 0; t < prefix.size(1); ++t) {
        INFO("incremental step " << t);
        const at::Tensor step = model->decoder_step_log_probs(prefix.select(1, t), *state);
        CHECK(max_abs_diff(step, f.tensor("p_seq" + std::to_string(i)).select(1, t)) < kTolerance);
      }
    }
  }
}

}  // namespace

TEST_CASE("upstream parity: ConMamba CTC and ConMamba + Transformer decoder", "[checkpoint]") {
  check_asr_parity("conmamba_ctc");
  check_asr_parity("conmamba_s2s");
}

TEST_CASE("upstream parity: ConMamba encoder + Mamba decoder", "[checkpoint]") {
  check_asr_parity("conmambamamba_s2s");
}

TEST_CASE("upstream parity: Conformer encoder (SpeechBrain's S2S and Mamba-ASR's CTC)",
          "[checkpoint]") {
  check_asr_parity("conformer_s2s");
  check_asr_parity("conformer_ctc");
}

TEST_CASE("upstream parity: Transformer encoder + Transformer decoder", "[checkpoint]") {
  check_asr_parity("transformer_s2s");
}

// SpeechBrain's own recipes of its current main (tests/fixtures/speechbrain/SOURCE.md), written
// by SpeechBrain's classes (make_speechbrain_fixtures.py): the kinds Mamba-ASR's files do not use.
TEST_CASE("upstream parity: SpeechBrain's RoPE Conformer and residual-front-end Transformer",
          "[checkpoint][speechbrain]") {
  check_asr_parity("sb_conformer_rope_s2s");
  check_asr_parity("sb_transformer_residual_s2s");
}

TEST_CASE("upstream parity: SpeechBrain's Branchformer, S2S and CTC", "[checkpoint][speechbrain]") {
  check_asr_parity("sb_branchformer_s2s");
  check_asr_parity("sb_branchformer_ctc");
}

TEST_CASE("upstream parity: SpeechBrain's HyperConformer and HyperBranchformer (HyperMixing)",
          "[checkpoint][speechbrain]") {
  check_asr_parity("sb_hyperconformer_s2s");
  check_asr_parity("sb_hyperbranchformer_s2s");
}

TEST_CASE("upstream parity: SpeechBrain's CTC Conformer", "[checkpoint][speechbrain]") {
  check_asr_parity("sb_conformer_ctc");
}

TEST_CASE("upstream parity: SpeechBrain TransformerLM", "[checkpoint]") {
  const Fixture f = fixture("transformer_lm");
  const auto lm =
      masr::models::LmModel::import_speechbrain(f.folder + "/model.ckpt", f.hparams, f.overrides);
  torch::NoGradGuard no_grad;
  CHECK(max_abs_diff(lm->lm()->forward(f.tensor("prefix"), lm->pad_index()),
                     f.tensor("lm_logits")) < kTolerance);
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

namespace {

// Upstream's greedy CTC path (SpeechBrain's ctc_greedy_decode): the argmax token of each frame,
// repeats merged, blanks dropped. log_probs: (1, T, vocab).
std::vector<int64_t> greedy_ctc_path(const at::Tensor& log_probs, int64_t blank) {
  const at::Tensor best = log_probs[0].argmax(-1).contiguous();
  std::vector<int64_t> path;
  int64_t previous = -1;
  for (int64_t t = 0; t < best.size(0); ++t) {
    const int64_t token = best[t].item<int64_t>();
    if (token != previous && token != blank) path.push_back(token);
    previous = token;
  }
  return path;
}

std::vector<float> samples_of(const at::Tensor& wav) {
  const at::Tensor flat = wav.reshape({-1}).to(at::kFloat).contiguous();
  return std::vector<float>(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
}

}  // namespace

TEST_CASE("mamba-asr import: every family's model file decodes, greedy CTC as upstream's",
          "[checkpoint]") {
  masr::testing::TempDir dir("import_families");
  const std::string exe = std::string(MASR_BINARY_DIR) + "/bin/mamba-asr";
  // Tokenizers of the fixtures' vocabulary sizes (decode needs one to print text): SpeechBrain's
  // 31 characters for the CTC families, 48 unigram pieces for the S2S ones.
  const auto sentences = masr::testing::librispeech_like_sentences(300);
  masr::text::TokenizerTrainOptions options;
  options.model_type = "char";
  options.vocab_size = 31;
  masr::text::Tokenizer::train(sentences, dir.file("tok31"), options);
  options.model_type = "unigram";
  options.vocab_size = 48;
  masr::text::Tokenizer::train(sentences, dir.file("tok48"), options);

  for (const std::string name : kAsrFamilies) {
    INFO(name);
    const Fixture f = fixture(name);
    const std::string masr_file = dir.file(name + ".masr");
    std::string cmd = exe + " -q import " + f.folder + " --hparams " + f.hparams;
    for (const auto& [k, v] : f.overrides) cmd += " --" + k + " " + v;
    cmd += " --tokenizer " + dir.file(f.kind == "s2s" ? "tok48.model" : "tok31.model") + " --out " +
           masr_file + " > " + dir.file("import.txt") + " 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    const auto model = masr::models::AsrModel::load(masr_file);
    CHECK(model->is_s2s() == (f.kind == "s2s"));

    // The fixture's waveforms as float WAV files (no rounding), decoded in one batch.
    fs::create_directories(dir.file(name));
    std::string wavs;
    for (int i = 0; i < 2; ++i) {
      const std::string wav = dir.file(name + "/w" + std::to_string(i) + ".wav");
      masr::audio::write_audio(wav, samples_of(f.tensor("wav" + std::to_string(i))), 16000, 1,
                               SF_FORMAT_WAV | SF_FORMAT_FLOAT);
      wavs += " " + wav;
    }
    const std::string out = dir.file(name + ".json");
    cmd = exe + " -q decode --model " + masr_file + " --search greedy --format json" + wavs +
          " > " + out + " 2> " + dir.file("decode.txt");
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream in(out);
    std::map<std::string, std::vector<int64_t>> tokens;
    for (std::string line; std::getline(in, line);) {
      const nlohmann::json j = nlohmann::json::parse(line);
      tokens[j["id"].get<std::string>()] = j["tokens"].get<std::vector<int64_t>>();
    }
    REQUIRE(tokens.size() == 2);
    for (int i = 0; i < 2; ++i) {
      const std::string id = "w" + std::to_string(i);
      INFO("waveform " << i);
      REQUIRE(tokens.count(id) == 1);
      CHECK(tokens[id] == greedy_ctc_path(f.tensor("p_ctc" + std::to_string(i)), 0));
    }
    if (f.kind == "s2s") {
      // The attention search runs on the imported decoder (its hypotheses are not compared here).
      cmd = exe + " -q decode --model " + masr_file + " --search s2s --beam 2" + wavs + " > " +
            dir.file("s2s.txt") + " 2>&1";
      CHECK(std::system(cmd.c_str()) == 0);
    }
  }
}

namespace {

// Relative tolerance on a hypothesis score against SpeechBrain's: the scores are sums of float32
// log-probabilities divided by the step count; ours differ from upstream's by about 3e-7.
constexpr double kSearchRelTolerance = 1e-3;

double number(const PyValue& dict, const std::string& key) {
  const PyValue* v = dict.find(key);
  if (v == nullptr) FAIL("beam_search.pt settings lack " << key);
  if (v->kind == PyValue::Kind::kInt) return static_cast<double>(v->i);
  if (v->kind != PyValue::Kind::kFloat) FAIL("beam_search.pt setting " << key << " is no number");
  return v->f;
}

// Row j of SpeechBrain's (k, L) hypotheses padded with -1.
std::vector<int64_t> hypothesis_row(const at::Tensor& tokens, int64_t j) {
  std::vector<int64_t> out;
  for (int64_t t = 0; t < tokens.size(1); ++t) {
    const int64_t id = tokens[j][t].item<int64_t>();
    if (id < 0) break;
    out.push_back(id);
  }
  return out;
}

// Our S2S beam search on each fixture waveform alone, with the settings SpeechBrain's searcher
// ran with (beam_search.pt, made by make_upstream_fixtures.py): full CTC scoring (no pre-beam),
// no LM, n-best = beam. Returns the largest relative score difference.
double check_beam_search_parity(const std::string& name) {
  const Fixture f = fixture(name);
  const auto upstream = masr::models::read_torch_save(f.folder + "/beam_search.pt");
  const PyValue* settings = upstream->find("settings");
  REQUIRE(settings != nullptr);
  auto model = masr::models::AsrModel::import_speechbrain(f.folder, f.hparams, f.overrides);
  model->eval();
  std::vector<std::string> pieces(static_cast<size_t>(model->vocab_size()), "x");
  masr::decode::AsrModelRecognizer recognizer(model, pieces);
  torch::NoGradGuard no_grad;
  const at::Tensor beams = upstream->find("beams")->tensor;
  double worst = 0.0;
  for (int i = 0; i < 2; ++i) {
    const at::Tensor feats = model->features(f.tensor("wav" + std::to_string(i)), {}, 1);
    const masr::models::Encoded enc = model->encode(feats);
    const at::Tensor ctc = model->ctc_log_probs(enc.out);
    for (int64_t b = 0; b < beams.size(0); ++b) {
      const int64_t k = beams[b].item<int64_t>();
      const std::string key = std::to_string(k) + "_tokens" + std::to_string(i);
      const at::Tensor tokens = upstream->find("beam" + key)->tensor;
      const at::Tensor scores =
          upstream->find("beam" + std::to_string(k) + "_scores" + std::to_string(i))->tensor;
      masr::decode::S2SBeamSearchOptions o;
      o.beam_size = o.nbest = k;
      o.ctc_weight = number(*settings, "ctc_weight");
      o.min_decode_ratio = number(*settings, "min_decode_ratio");
      o.max_decode_ratio = number(*settings, "max_decode_ratio");
      o.bos = static_cast<int64_t>(number(*settings, "bos"));
      o.eos = static_cast<int64_t>(number(*settings, "eos"));
      o.blank = static_cast<int64_t>(number(*settings, "blank"));
      o.ctc_pre_beam = 0;  // SpeechBrain's full CTCScorer scores every token
      auto scorer =
          recognizer.incremental_decoder(enc.out, enc.lengths, number(*settings, "temperature"));
      REQUIRE(scorer);
      const auto nbest = masr::decode::S2SBeamSearch(o).search(enc.out.size(1), enc.lengths,
                                                               scorer.get(), ctc, nullptr)[0];
      REQUIRE(static_cast<int64_t>(nbest.size()) == k);
      for (int64_t j = 0; j < k; ++j) {
        INFO(name << ", waveform " << i << ", beam " << k << ", hypothesis " << j);
        const double theirs = scores[j].item<double>();
        const double diff = std::abs(nbest[j].score - theirs) / std::abs(theirs);
        worst = std::max(worst, diff);
        CHECK(nbest[j].tokens == hypothesis_row(tokens, j));
        CHECK(diff < kSearchRelTolerance);
      }
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("upstream parity: S2S beam search finds SpeechBrain's n-best", "[checkpoint][decode]") {
  // Random-weight models rarely emit eos, so most hypotheses end at the length cap (one step per
  // encoder frame): upstream returns those without their last token, and so must we.
  for (const std::string name : {"conmamba_s2s", "conmambamamba_s2s", "conformer_s2s"}) {
    const double worst = check_beam_search_parity(name);
    INFO(name << ": largest relative score difference " << worst);  // 3.1e-7 when written
    CHECK(worst < kSearchRelTolerance);
  }
}
