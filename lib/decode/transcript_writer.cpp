// lib/decode/transcript_writer.cpp
#include "decode/transcript_writer.h"

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"

namespace masr::decode {
namespace {

namespace fs = std::filesystem;

constexpr OutputFormat kAllFormats[] = {OutputFormat::kText, OutputFormat::kTxt,
                                        OutputFormat::kJson, OutputFormat::kSrt,
                                        OutputFormat::kVtt,  OutputFormat::kCtm};

}  // namespace

const char* output_format_name(OutputFormat format) {
  switch (format) {
    case OutputFormat::kText:
      return "text";
    case OutputFormat::kTxt:
      return "txt";
    case OutputFormat::kJson:
      return "json";
    case OutputFormat::kSrt:
      return "srt";
    case OutputFormat::kVtt:
      return "vtt";
    case OutputFormat::kCtm:
      return "ctm";
  }
  return "?";
}

std::vector<OutputFormat> parse_output_formats(const std::string& list) {
  std::vector<OutputFormat> out;
  std::stringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    bool known = false;
    for (OutputFormat f : kAllFormats) {
      if (name != output_format_name(f)) continue;
      known = true;
      if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
    }
    if (!known) {
      throw Error(ErrorKind::kUsage, "--format '" + name +
                                         "': give text, txt, json, srt, vtt or ctm, or several "
                                         "separated by commas (srt,json)");
    }
  }
  if (out.empty()) throw Error(ErrorKind::kUsage, "--format: give at least one format");
  return out;
}

std::string render_transcript(const Transcript& t, OutputFormat format,
                              const SubtitleOptions& subtitles, int& cue) {
  switch (format) {
    case OutputFormat::kText:
      return format_text(t);
    case OutputFormat::kTxt:
      return t.text + "\n";
    case OutputFormat::kJson:
      return format_json(t);
    case OutputFormat::kSrt:
      return format_srt(t, cue, subtitles);
    case OutputFormat::kVtt:
      return format_vtt(t, subtitles);
    case OutputFormat::kCtm:
      return format_ctm(t);
  }
  return "";
}

std::string output_file_stem(const std::string& id) {
  std::string out;
  std::stringstream in(id);
  for (std::string part; std::getline(in, part, '/');) {
    if (part.empty() && out.empty()) continue;  // a leading '/'
    if (part.empty() || part == "." || part == "..") part = "_";
    out += (out.empty() ? "" : "/") + part;
  }
  return out.empty() ? "_" : out;
}

TranscriptWriter::TranscriptWriter(std::vector<OutputFormat> formats, std::string output_dir,
                                   SubtitleOptions subtitles, std::ostream& out)
    : formats_(std::move(formats)),
      dir_(std::move(output_dir)),
      subtitles_(std::move(subtitles)),
      out_(out) {}

void TranscriptWriter::check(size_t inputs) const {
  if (!dir_.empty()) return;
  if (formats_.size() > 1) {
    throw Error(
        ErrorKind::kUsage, "decode: several formats (--format " + [&] {
          std::string names;
          for (OutputFormat f : formats_)
            names += (names.empty() ? "" : ",") + std::string(output_format_name(f));
          return names;
        }() + ") cannot share stdout; give -o DIR to write one file per input and format");
  }
  const OutputFormat f = formats_.front();
  if ((f == OutputFormat::kSrt || f == OutputFormat::kVtt) && inputs > 1) {
    throw Error(ErrorKind::kUsage,
                std::string("decode: --format ") + output_format_name(f) + " of " +
                    std::to_string(inputs) +
                    " inputs would be one subtitle stream whose times restart at each input; give "
                    "-o DIR to write one subtitle file per input (DIR/NAME." +
                    output_format_name(f) + ")");
  }
}

void TranscriptWriter::write(const Transcript& t) {
  if (dir_.empty()) {
    const OutputFormat f = formats_.front();
    if (!started_ && f == OutputFormat::kVtt) out_ << kWebVttHeader;
    started_ = true;
    out_ << render_transcript(t, f, subtitles_, cue_) << std::flush;
    return;
  }
  const fs::path stem = fs::path(dir_) / output_file_stem(t.id);
  for (OutputFormat f : formats_) {
    if (f == OutputFormat::kText) {
      if (!kaldi_text_) {
        fs::create_directories(dir_);
        const std::string path = (fs::path(dir_) / "text").string();
        kaldi_text_ = std::make_unique<std::ofstream>(path, std::ios::binary);
        if (!*kaldi_text_) throw_io_error("decode: cannot write '" + path + "'");
        ++files_;
      }
      *kaldi_text_ << format_text(t) << std::flush;
      if (!*kaldi_text_) throw_io_error("decode: writing '" + dir_ + "/text' failed");
      continue;
    }
    int cue = 0;  // each file numbers its own cues
    std::string body = render_transcript(t, f, subtitles_, cue);
    if (f == OutputFormat::kVtt) body = kWebVttHeader + body;
    const fs::path path = stem.string() + "." + output_format_name(f);
    std::error_code error;
    fs::create_directories(path.parent_path(), error);
    if (error) {
      throw_io_error("decode: cannot create the folder '" + path.parent_path().string() +
                     "': " + error.message());
    }
    write_file_atomically(path.string(), body);
    ++files_;
  }
}

}  // namespace masr::decode
