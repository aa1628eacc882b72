// lib/audio/ogg_opus.h
// Ogg Opus files with a single Opus stream (channel mapping family 0: mono or stereo, what opusenc,
// ffmpeg and libsndfile write), decoded with libogg and libopus's single-stream decoder.
//
// Why not libsndfile for these: it decodes through libopus's multistream decoder, which computes
// its per-stream decoder sizes on every packet; in the libopus build of Debian's archive that
// re-runs the CPU feature detection (the `cpuid` instruction) each time, and in a virtual machine
// every `cpuid` traps to the hypervisor. That was a quarter of the training loader's time on Opus
// corpora. The single-stream decoder detects the CPU once, when it is created.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace masr::audio {

struct DecodedAudio {
  std::vector<float> interleaved;  // frames x channels
  int channels = 0;
  int sample_rate = 0;
};

// Whether `head` (the first bytes of a file; 36 are enough) starts an Ogg Opus stream.
bool looks_like_ogg_opus(const char* head, size_t size);

// Decodes a whole Ogg Opus file held in memory the way libsndfile does: at the smallest rate
// Opus decodes to (8, 12, 16, 24 or 48 kHz) that is at least the encoder's input rate, with the
// header's output gain applied, the pre-skip dropped and the end trimmed to the last granule
// position. Returns nullopt for anything it does not handle exactly (surround mapping families,
// chained or multiplexed streams, gaps, packets libopus rejects, a stream shorter than its last
// granule position): the caller then reads the file with libsndfile, which has its own errors.
std::optional<DecodedAudio> decode_ogg_opus(const std::string& bytes);

}  // namespace masr::audio
