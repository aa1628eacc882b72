// lib/decode/decode_inputs.cpp
// Expanding decode inputs into utterances.
#include "decode/decode_inputs.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"

namespace masr::decode {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

data::ManifestRow audio_row(const fs::path& path, const std::string& source) {
  data::ManifestRow row;
  row.id = path.stem().string();
  row.wav = path.string();
  row.source = source;
  return row;
}

struct Gathering {
  std::istream& in;
  const data::Replacements& replacements;
  const std::optional<audio::RawPcmFormat>& raw_pcm;
  DecodeInputs out;
  bool stdin_read = false;
};

bool is_audio_extension(const std::string& ext, bool raw_pcm) {
  const auto& known = audio_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end() ||
         (raw_pcm && (ext == ".raw" || ext == ".pcm"));
}

void append_folder(const fs::path& folder, bool raw_pcm, std::vector<data::ManifestRow>& rows) {
  if (fs::exists(folder / "wav.scp")) {  // a Kaldi data folder
    for (auto& row : data::read_kaldi_dir(folder.string()).rows) rows.push_back(std::move(row));
    return;
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    const std::string ext = lower(entry.path().extension().string());
    if (entry.is_regular_file() && is_audio_extension(ext, raw_pcm)) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& file : files) rows.push_back(audio_row(file, folder.string()));
}

// "-": stdin as one audio file, or as a list of paths.
void append_stdin(Gathering& g) {
  if (g.stdin_read) {
    throw_input_error("decode inputs: '-' (stdin) is given twice; stdin can be read only once");
  }
  g.stdin_read = true;
  auto bytes = std::make_shared<std::string>(read_all(g.in));
  if (bytes->empty()) {
    throw_input_error(
        "decode input '-': stdin is empty; pipe in an audio file (mamba-asr decode ... - < "
        "audio.wav), headerless PCM with --raw-pcm, or a list of audio paths");
  }
  if (g.raw_pcm || audio::has_audio_header(*bytes)) {
    data::ManifestRow row;
    row.id = kStdinId;
    row.wav = kStdinPath;
    row.source = "stdin";
    g.out.rows.push_back(std::move(row));
    g.out.audio.stdin_bytes = std::move(bytes);
    return;
  }
  if (bytes->find('\0') != std::string::npos) {
    throw_input_error("decode input '-': stdin (" + std::to_string(bytes->size()) +
                      " bytes) is neither audio that libsndfile reads nor a list of paths; for "
                      "headerless PCM give its format, e.g. --raw-pcm s16le:16000");
  }
  size_t n = 0;
  for (size_t begin = 0; begin < bytes->size();) {
    const size_t newline = bytes->find('\n', begin);
    const size_t end = newline == std::string::npos ? bytes->size() : newline;
    const std::string line = bytes->substr(begin, end - begin);
    begin = end + 1;
    ++n;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string path = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    g.out.rows.push_back(audio_row(path, "stdin:" + std::to_string(n)));
  }
}

void append_input(const std::string& input, Gathering& g) {
  std::vector<data::ManifestRow>& rows = g.out.rows;
  const data::Replacements& replacements = g.replacements;
  if (input == "-") return append_stdin(g);
  if (input.size() > 1 && input[0] == '@') {
    for (auto& row : data::read_audio_list(input.substr(1)).rows) rows.push_back(std::move(row));
    return;
  }
  const fs::path path(input);
  const std::string ext = lower(path.extension().string());
  if (!fs::exists(path)) {
    // A missing audio file is one bad utterance among many: the reader reports and skips it.
    if (ext == ".csv" || path.filename() == "wav.scp" || ext.empty()) {
      throw_input_error("decode input '" + input + "' does not exist");
    }
    rows.push_back(audio_row(path, input));
    return;
  }
  if (fs::is_directory(path)) return append_folder(path, g.raw_pcm.has_value(), rows);
  if (ext == ".csv") {
    for (auto& row : data::read_speechbrain_csv(input, replacements).rows)
      rows.push_back(std::move(row));
  } else if (path.filename() == "wav.scp") {
    const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
    for (auto& row : data::read_kaldi_dir(parent.string()).rows) rows.push_back(std::move(row));
  } else {
    rows.push_back(audio_row(path, input));
  }
}

}  // namespace

const std::vector<std::string>& audio_extensions() {
  static const std::vector<std::string> extensions = {".wav", ".flac", ".ogg", ".opus",
                                                      ".mp3", ".aiff", ".au",  ".sph"};
  return extensions;
}

std::string read_all(std::istream& in) {
  std::string bytes;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    bytes.append(buffer, static_cast<size_t>(in.gcount()));
  }
  return bytes;
}

audio::AudioInfo InputAudio::probe(const data::ManifestRow& row) const {
  if (stdin_bytes && row.wav == kStdinPath) {
    return raw_pcm ? audio::probe_raw_pcm(stdin_bytes->size(), *raw_pcm, kStdinId)
                   : audio::probe_audio_bytes(*stdin_bytes, kStdinId);
  }
  return raw_pcm ? audio::probe_raw_pcm_file(row.wav, *raw_pcm) : audio::probe_audio(row.wav);
}

std::vector<float> InputAudio::read(const data::ManifestRow& row, int sample_rate) const {
  if (stdin_bytes && row.wav == kStdinPath) {
    return raw_pcm ? audio::decode_raw_pcm(*stdin_bytes, *raw_pcm, kStdinId, sample_rate).samples
                   : audio::read_audio_bytes(*stdin_bytes, kStdinId, sample_rate).samples;
  }
  return raw_pcm ? audio::read_raw_pcm_file(row.wav, *raw_pcm, sample_rate).samples
                 : audio::read_audio(row.wav, sample_rate).samples;
}

std::unique_ptr<SampleStream> InputAudio::open_stream(const data::ManifestRow& row,
                                                     int sample_rate) const {
  const bool from_stdin = stdin_bytes && row.wav == kStdinPath;
  if (!from_stdin && !raw_pcm) {
    if (auto stream = open_file_sample_stream(row.wav, sample_rate)) return stream;
  }
  return std::make_unique<MemorySampleStream>(read(row, sample_rate));
}

DecodeInputs gather_decode_inputs(const std::vector<std::string>& inputs,
                                  std::istream& stdin_stream,
                                  const data::Replacements& replacements,
                                  const std::optional<audio::RawPcmFormat>& raw_pcm) {
  Gathering g{stdin_stream, replacements, raw_pcm, {}};
  g.out.audio.raw_pcm = raw_pcm;
  for (const std::string& input : inputs) append_input(input, g);
  std::map<std::string, std::string> seen;  // id -> source
  for (const auto& row : g.out.rows) {
    const auto [it, fresh] = seen.emplace(row.id, row.source);
    if (!fresh) {
      throw_input_error("decode inputs: utterance id '" + row.id + "' appears twice (" +
                        it->second + " and " + row.source +
                        "); ids are file names without extension, so rename one file or use a CSV");
    }
  }
  return std::move(g.out);
}

std::vector<data::ManifestRow> gather_inputs(const std::vector<std::string>& inputs,
                                             std::istream& stdin_stream,
                                             const data::Replacements& replacements) {
  DecodeInputs gathered = gather_decode_inputs(inputs, stdin_stream, replacements);
  if (gathered.audio.stdin_bytes) {
    throw_input_error(
        "decode input '-': stdin holds audio, but this command reads stdin only as "
        "a list of paths");
  }
  return std::move(gathered.rows);
}

}  // namespace masr::decode
