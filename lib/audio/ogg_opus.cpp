// lib/audio/ogg_opus.cpp
// Ogg pages -> Opus packets (libogg) -> PCM (libopus, one OpusDecoder). RFC 7845 gives the header
// layout, the pre-skip and the granule-position rules used here.
#include "audio/ogg_opus.h"

#include <ogg/ogg.h>
#include <opus/opus.h>

#include <cstdint>
#include <cstring>
#include <memory>

namespace masr::audio {
namespace {

constexpr char kOggMagic[] = "OggS";
constexpr char kHeadMagic[] = "OpusHead";
constexpr char kTagsMagic[] = "OpusTags";
constexpr size_t kHeadOffset = 28;  // an Ogg page header with one lacing value
constexpr int kMaxFrame48k = 5760;  // 120 ms, the longest Opus packet

uint16_t le16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// The identification header (RFC 7845 section 5.1).
struct OpusHead {
  int channels = 0;
  int pre_skip = 0;        // 48 kHz samples
  uint32_t input_rate = 0;  // what the encoder was given; 0: unknown
  int output_gain = 0;     // Q7.8 dB
  int mapping_family = 0;
};

std::optional<OpusHead> parse_head(const ogg_packet& packet) {
  const unsigned char* p = packet.packet;
  if (packet.bytes < 19 || std::memcmp(p, kHeadMagic, 8) != 0) return std::nullopt;
  if ((p[8] >> 4) != 0) return std::nullopt;  // major version 0 is the only one defined
  OpusHead head;
  head.channels = p[9];
  head.pre_skip = le16(p + 10);
  head.input_rate = le32(p + 12);
  head.output_gain = static_cast<int16_t>(le16(p + 16));
  head.mapping_family = p[18];
  if (head.mapping_family != 0 || head.channels < 1 || head.channels > 2) return std::nullopt;
  return head;
}

// The smallest rate libopus decodes to that keeps the encoder's input band, as libsndfile picks it.
int decode_rate(uint32_t input_rate) {
  for (int rate : {8000, 12000, 16000, 24000}) {
    if (input_rate <= static_cast<uint32_t>(rate)) return rate;
  }
  return 48000;
}

struct DecoderCloser {
  void operator()(OpusDecoder* d) const { opus_decoder_destroy(d); }
};

// libogg's states own heap buffers; these wrappers release them on every path out.
struct SyncState {
  ogg_sync_state state{};
  SyncState() { ogg_sync_init(&state); }
  ~SyncState() { ogg_sync_clear(&state); }
  SyncState(const SyncState&) = delete;
  SyncState& operator=(const SyncState&) = delete;
};
struct StreamState {
  ogg_stream_state state{};
  bool initialised = false;
  void init(int serial) {
    ogg_stream_init(&state, serial);
    initialised = true;
  }
  StreamState() = default;
  ~StreamState() {
    if (initialised) ogg_stream_clear(&state);
  }
  StreamState(const StreamState&) = delete;
  StreamState& operator=(const StreamState&) = delete;
};

}  // namespace

bool looks_like_ogg_opus(const char* head, size_t size) {
  return size >= kHeadOffset + 8 && std::memcmp(head, kOggMagic, 4) == 0 &&
         std::memcmp(head + kHeadOffset, kHeadMagic, 8) == 0;
}

std::optional<DecodedAudio> decode_ogg_opus(const std::string& bytes) {
  if (!looks_like_ogg_opus(bytes.data(), bytes.size())) return std::nullopt;
  SyncState sync;
  char* buffer = ogg_sync_buffer(&sync.state, static_cast<long>(bytes.size()));
  if (buffer == nullptr) return std::nullopt;
  std::memcpy(buffer, bytes.data(), bytes.size());
  ogg_sync_wrote(&sync.state, static_cast<long>(bytes.size()));

  StreamState stream;
  std::optional<OpusHead> head;
  std::unique_ptr<OpusDecoder, DecoderCloser> decoder;
  DecodedAudio out;
  int factor = 1;  // 48 kHz samples per output sample
  int64_t packets = 0;
  int64_t last_granule = -1;
  bool ended = false;
  std::vector<float> frame;

  ogg_page page;
  for (int got; (got = ogg_sync_pageout(&sync.state, &page)) != 0;) {
    if (got < 0) return std::nullopt;  // bytes skipped to find the next page: a damaged file
    if (!stream.initialised) {
      if (!ogg_page_bos(&page)) return std::nullopt;
      stream.init(ogg_page_serialno(&page));
    } else if (ogg_page_serialno(&page) != stream.state.serialno || ended) {
      return std::nullopt;  // multiplexed or chained streams
    }
    if (ogg_stream_pagein(&stream.state, &page) != 0) return std::nullopt;
    if (ogg_page_granulepos(&page) >= 0) last_granule = ogg_page_granulepos(&page);
    ended = ogg_page_eos(&page) != 0;
    ogg_packet packet;
    for (int status; (status = ogg_stream_packetout(&stream.state, &packet)) != 0;) {
      if (status < 0) return std::nullopt;  // a gap in the page sequence
      if (packets == 0) {
        head = parse_head(packet);
        // An unknown input rate (0) is left to libsndfile, which then decodes at 8 kHz.
        if (!head || head->input_rate == 0) return std::nullopt;
        out.channels = head->channels;
        out.sample_rate = decode_rate(head->input_rate);
        factor = 48000 / out.sample_rate;
        int error = OPUS_OK;
        decoder.reset(opus_decoder_create(out.sample_rate, out.channels, &error));
        if (error != OPUS_OK || !decoder) return std::nullopt;
        if (head->output_gain != 0 &&
            opus_decoder_ctl(decoder.get(), OPUS_SET_GAIN(head->output_gain)) != OPUS_OK) {
          return std::nullopt;
        }
        frame.resize(static_cast<size_t>(kMaxFrame48k / factor) * out.channels);
      } else if (packets == 1) {
        if (packet.bytes < 8 || std::memcmp(packet.packet, kTagsMagic, 8) != 0) {
          return std::nullopt;
        }
      } else {
        const int n = opus_decode_float(decoder.get(), packet.packet,
                                        static_cast<opus_int32>(packet.bytes), frame.data(),
                                        kMaxFrame48k / factor, 0);
        if (n < 0) return std::nullopt;
        out.interleaved.insert(out.interleaved.end(), frame.begin(),
                               frame.begin() + static_cast<ptrdiff_t>(n) * out.channels);
      }
      ++packets;
    }
  }
  if (!head || last_granule < head->pre_skip) return std::nullopt;
  // The last granule position counts 48 kHz samples from the stream's start, pre-skip included.
  const int64_t skip = head->pre_skip / factor;
  const int64_t frames = (last_granule - head->pre_skip) / factor;
  const int64_t decoded = static_cast<int64_t>(out.interleaved.size()) / out.channels;
  if (frames <= 0 || skip + frames > decoded) return std::nullopt;
  out.interleaved.erase(out.interleaved.begin() + (skip + frames) * out.channels,
                        out.interleaved.end());
  out.interleaved.erase(out.interleaved.begin(), out.interleaved.begin() + skip * out.channels);
  return out;
}

}  // namespace masr::audio
