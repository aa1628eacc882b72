// lib/models/checkpoint.h
// The mamba-asr model file (`model.masr`): one self-describing, versioned file holding the model
// type, the model's resolved hparams, every parameter and buffer, and the tokenizer.
//
// Layout, format version 1 (integers little-endian):
//   "MASRMODL"            8 bytes magic
//   u32 version           kCheckpointFormatVersion
//   u32 section count
//   per section:          u32 name length, name, u64 data length, data
//   u32 CRC-32            (IEEE, zlib's) of every byte before it
//   "MASR_END"            8 bytes end marker (absent: the file is truncated)
// Sections: "model_type" ("ctc" | "s2s": AsrModel; "lm": LmModel), "hparams.yaml" (the model's
// hparams_yaml()), "state" (torch.save/torch::pickle_save zip of a {name: tensor} dict, names as
// AsrModel::named_state();
// Python reads it with torch.load(io.BytesIO(bytes))), optional "tokenizer.model" (SentencePiece
// model bytes). Readers ignore sections they do not know.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace masr::models {

class AsrModel;

constexpr uint32_t kCheckpointFormatVersion = 1;

struct CheckpointData {
  std::string model_type;
  std::string hparams_yaml;
  std::vector<std::pair<std::string, at::Tensor>> state;
  std::string tokenizer_model;  // empty: no tokenizer
};

// Writes atomically: a temporary file in the same folder, fsync, rename over `path`, fsync of
// the folder. A crash leaves either the old file or the new one.
void write_checkpoint(const std::string& path, const CheckpointData& data);
// Throws masr::Error naming `path` for a missing file (io), and for a file that is not a model,
// truncated, corrupt (checksum) or of another format version (input).
CheckpointData read_checkpoint(const std::string& path);

// What -m/--model names: a model file, or a folder holding model.masr (as `train` writes it);
// an input error naming the folder when it holds none.
std::string model_file_in(const std::string& path);

// SpeechBrain's average_checkpoints(recoverable_name="model"): the element-wise mean of every
// parameter and model buffer over the checkpoints; the normalization statistics (a separate
// recoverable upstream, restored from the best checkpoint) and the tokenizer come from the
// first path, so list the best one first. All must share the hparams and state names/shapes.
std::shared_ptr<AsrModel> average_checkpoints(const std::vector<std::string>& paths);

// What convert_weights did: tensors stored in the new type, tensors kept (integers, the
// normalization statistics), and the file sizes in bytes.
struct WeightConversion {
  int64_t converted = 0;
  int64_t kept = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

// Rewrites the model file `in` (any model type: ASR or LM) as `out` with its floating-point
// weights stored as `dtype` (at::kHalf or at::kFloat). The normalization statistics stay float32
// (they are a few hundred numbers, and the features are divided by them). Loading copies the
// stored weights into the model's float32 parameters, so a float16 file decodes with its weights
// rounded to float16 (11 significant bits) at half the size; converting back to float32 does not
// restore the lost bits. `out` is written atomically and may be `in`.
WeightConversion convert_weights(const std::string& in, const std::string& out,
                                 at::ScalarType dtype);


}  // namespace masr::models
