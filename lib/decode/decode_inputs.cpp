// lib/decode/decode_inputs.cpp
// Expanding decode inputs into utterances.
#include "decode/decode_inputs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
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

// `path` without its extension, '/'-separated, without "./" in front.
std::string without_extension(const fs::path& path) {
  return path.lexically_normal().replace_extension().generic_string();
}

struct Gathering {
  std::istream& in;
  const data::Replacements& replacements;
  const std::optional<audio::RawPcmFormat>& raw_pcm;
  DecodeInputs out;
  // Per row, the longer ids it may take when its id repeats (empty for a manifest's own ids).
  std::vector<std::vector<std::string>> longer_ids;
  bool stdin_read = false;

  // A row that keeps its own id (a manifest's).
  void add(data::ManifestRow row) {
    out.rows.push_back(std::move(row));
    longer_ids.emplace_back();
  }
  // An audio file: id its name without extension; when that repeats, its path below `folder`
  // (folder inputs), then its path as given.
  void add_audio(const fs::path& path, const std::string& source, const fs::path& folder = {}) {
    data::ManifestRow row;
    row.id = path.stem().string();
    row.wav = path.string();
    row.source = source;
    std::vector<std::string> longer;
    if (!folder.empty()) longer.push_back(without_extension(path.lexically_relative(folder)));
    longer.push_back(without_extension(path));
    longer.erase(std::unique(longer.begin(), longer.end()), longer.end());
    out.rows.push_back(std::move(row));
    longer_ids.push_back(std::move(longer));
  }
};

// Rows whose ids repeat take their next longer id until every id is unique or no row has one
// left; then a repeat is an input error naming both sources.
void make_ids_unique(Gathering& g) {
  std::vector<data::ManifestRow>& rows = g.out.rows;
  std::vector<size_t> level(rows.size(), 0);
  for (bool changed = true; changed;) {
    changed = false;
    std::map<std::string, std::vector<size_t>> by_id;
    for (size_t i = 0; i < rows.size(); ++i) by_id[rows[i].id].push_back(i);
    for (const auto& [id, group] : by_id) {
      if (group.size() < 2) continue;
      for (size_t i : group) {
        if (level[i] < g.longer_ids[i].size()) {
          rows[i].id = g.longer_ids[i][level[i]++];
          changed = true;
        }
      }
    }
  }
  std::map<std::string, size_t> seen;  // id -> row
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto [it, fresh] = seen.emplace(rows[i].id, i);
    if (fresh) continue;
    const data::ManifestRow& first = rows[it->second];
    if (first.wav == rows[i].wav && !g.longer_ids[i].empty()) {
      throw_input_error("decode inputs: '" + rows[i].wav + "' is given twice (" + first.source +
                        " and " + rows[i].source + "); give each file once");
    }
    throw_input_error("decode inputs: utterance id '" + rows[i].id + "' appears twice (" +
                      first.source + " and " + rows[i].source +
                      "); a manifest's ids must be unique, so rename one");
  }
}

bool is_audio_extension(const std::string& ext, bool raw_pcm) {
  const auto& known = audio_extensions();
  return std::find(known.begin(), known.end(), ext) != known.end() ||
         (raw_pcm && (ext == ".raw" || ext == ".pcm"));
}

void append_folder(const fs::path& folder, bool raw_pcm, Gathering& g) {
  if (fs::exists(folder / "wav.scp")) {  // a Kaldi data folder
    for (auto& row : data::read_kaldi_dir(folder.string()).rows) g.add(std::move(row));
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
  for (const fs::path& file : files) g.add_audio(file, folder.string(), folder);
}

// One audio path per line of `text` (blank lines and '#' comments skipped); `name` names the list
// in each row's source.
void append_path_list(const std::string& text, const std::string& name, Gathering& g) {
  size_t n = 0;
  for (size_t begin = 0; begin < text.size();) {
    const size_t newline = text.find('\n', begin);
    const size_t end = newline == std::string::npos ? text.size() : newline;
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    ++n;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string path = line.substr(first, line.find_last_not_of(" \t\r") - first + 1);
    g.add_audio(path, name + ":" + std::to_string(n));
  }
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
  if (g.raw_pcm) audio::warn_if_audio_header(bytes->substr(0, 16), "stdin");
  if (g.raw_pcm || audio::has_audio_header(*bytes)) {
    data::ManifestRow row;
    row.id = kStdinId;
    row.wav = kStdinPath;
    row.source = "stdin";
    g.add(std::move(row));
    g.out.audio.stdin_bytes = std::move(bytes);
    return;
  }
  if (bytes->find('\0') != std::string::npos) {
    throw_input_error("decode input '-': stdin (" + std::to_string(bytes->size()) +
                      " bytes) is neither audio that libsndfile reads nor a list of paths; for "
                      "headerless PCM give its format, e.g. --raw-pcm s16le:16000");
  }
  append_path_list(*bytes, "stdin", g);
}

void append_input(const std::string& input, Gathering& g) {
  const data::Replacements& replacements = g.replacements;
  if (input == "-") return append_stdin(g);
  if (input.size() > 1 && input[0] == '@') {
    const std::string list = input.substr(1);
    std::ifstream in(list, std::ios::binary);
    if (!in) throw_input_error("decode input '" + input + "': cannot open the list '" + list + "'");
    const size_t before = g.out.rows.size();
    append_path_list(read_all(in), list, g);
    if (g.out.rows.size() == before) {
      throw_input_error(list + ": empty file; expected one audio path per line");
    }
    return;
  }
  const fs::path path(input);
  const std::string ext = lower(path.extension().string());
  if (!fs::exists(path)) {
    // A missing audio file is one bad utterance among many: the reader reports and skips it.
    if (ext == ".csv" || path.filename() == "wav.scp" || ext.empty()) {
      throw_input_error("decode input '" + input + "' does not exist");
    }
    g.add_audio(path, input);
    return;
  }
  if (fs::is_directory(path)) return append_folder(path, g.raw_pcm.has_value(), g);
  if (ext == ".csv") {
    for (auto& row : data::read_speechbrain_csv(input, replacements).rows) g.add(std::move(row));
  } else if (path.filename() == "wav.scp") {
    const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
    for (auto& row : data::read_kaldi_dir(parent.string()).rows) g.add(std::move(row));
  } else {
    g.add_audio(path, input);
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
  Gathering g{stdin_stream, replacements, raw_pcm, {}, {}};
  g.out.audio.raw_pcm = raw_pcm;
  for (const std::string& input : inputs) append_input(input, g);
  make_ids_unique(g);
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
