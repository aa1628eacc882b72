// lib/decode/decode_benchmark.h
// Registers the "s2s-step" benchmark of `mamba-asr bench`: S2S beam search time per step with the
// decoder re-run over the prefix or stepped with caches, and full or partial CTC scoring.
#pragma once

namespace masr::decode {

void register_decode_benchmarks();

}  // namespace masr::decode
