// lib/decode/chunked_decoder.h
// Long recordings in bounded memory: the audio is encoded in overlapping windows read front to
// back, each window's central frames are searched, and the pieces are joined into one transcript
// with continuous word times. Memory depends on the window, not on the recording's length.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decode/batch_decoder.h"
#include "decode/sample_stream.h"

namespace masr::decode {

// How a long file is cut. A window holds `chunk_seconds` of audio: `overlap_seconds` of context
// on each side, which the encoder sees but whose frames are taken from the neighbouring window,
// and a central part whose frames are kept. The kept part ends at a cut chosen in the last third
// of the central part: the middle of the longest run of frames where CTC's best token is blank
// (a pause), else the quietest frame.
struct ChunkingOptions {
  double chunk_seconds = 30.0;  // 0: every file in one pass
  double overlap_seconds = 2.0;
  // A gap of at least this long between the last token before a cut and the first after it is a
  // word boundary (a word separator is inserted when neither side has one).
  double pause_seconds = 0.3;
  // Each stretch of the kept part between pauses is encoded again on its own audio, trimmed to
  // its speech (silence kept: 0.05 s before it, none for a causal model, 0.1 s after it), and that
  // is what is searched: the encoder then sees what it saw in training, one utterance that starts
  // with its speech, at the price of a second encoder pass. Off: the kept frames of the window,
  // which saw the overlap as context, are searched.
  bool segments = true;

  bool enabled() const { return chunk_seconds > 0; }
  // Whether `samples` at `sample_rate` are decoded in windows (longer than one window).
  bool applies_to(size_t samples, int sample_rate) const;
  void validate() const;  // throws a config error naming the option
};

// A cut for frames [0, T) of log_probs (T, V) (the search span of a window): the middle of the
// longest run of frames whose best token is `blank` (the later run on ties); with no such frame,
// the frame of least `energy` (one value per frame; may be empty, then the frame most likely
// blank). Returns an index in [0, T).
int64_t choose_cut(const at::Tensor& log_probs, const std::vector<double>& energy, int64_t blank);

// Appends `piece` (frames relative to its own start) to `all`, shifting its frames by `offset`.
// A token run that continues across the cut (same token, its last frame of `all` touching its
// first of `piece`) is merged, as CTC collapses repeats; a gap of at least `pause_frames` with no
// word boundary on either side gets `separator` (when >= 0) inserted, and of a separator on each
// side only one is kept. starts_word[token]: the token begins a word (SentencePiece "▁x");
// separators[token]: the token is a word separator with no text (" ", "▁").
void append_hypothesis(CtcHypothesis& all, const CtcHypothesis& piece, int64_t offset,
                       int64_t separator, int64_t pause_frames,
                       const std::vector<char>& starts_word, const std::vector<char>& separators);

struct ChunkedDecodeStats {
  size_t windows = 0;
  size_t stretches = 0;  // segments mode: stretches encoded again on their own
  double seconds = 0.0;  // audio decoded
};

// seconds of audio decoded so far, after every window.
using ChunkProgress = std::function<void(double)>;

// Decodes all of `audio` (samples at the model's rate) window by window with config's search
// (greedy, ctc-beam, rescore or s2s; the searches restart at every cut, so an n-gram or neural
// LM does not see across it). The transcript's nbest holds only the joined best hypothesis.
Transcript decode_chunked(RecognitionModel& model, SampleStream& audio, const DecodeConfig& config,
                          const ChunkingOptions& chunking, SequenceScorer* lm = nullptr,
                          const ChunkProgress& progress = {}, ChunkedDecodeStats* stats = nullptr);

}  // namespace masr::decode
