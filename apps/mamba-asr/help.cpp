// apps/mamba-asr/help.cpp
// How `mamba-asr` explains itself: help pages with the usage line first, each option on one line
// with its default in brackets (as whisper.cpp's), the global options in every subcommand's page,
// `mamba-asr help SUBCOMMAND`, and "did you mean" for a mistyped subcommand or option.
#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "commands.h"
#include "core/suggest.h"

namespace masr::cli {
namespace {

constexpr size_t kNameColumn = 30;  // where option descriptions start
constexpr size_t kLineWidth = 100;

// Options that say how to get help or the version: shown once, on the top-level page.
bool is_meta(const CLI::Option* opt) {
  return opt->check_lname("help") || opt->check_lname("help-all") || opt->check_lname("version");
}

const CLI::App* root_of(const CLI::App* app) {
  while (app->get_parent() != nullptr) app = app->get_parent();
  return app;
}

// `text` broken into lines of at most `width` characters after `indent` spaces (words longer than
// a line stay whole); the first line is not indented.
std::string wrap(const std::string& text, size_t indent, size_t width) {
  std::string out, line;
  std::istringstream words(text);
  const size_t room = width > indent + 20 ? width - indent : 20;
  for (std::string word; words >> word;) {
    if (!line.empty() && line.size() + 1 + word.size() > room) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    const bool top = app->get_parent() == nullptr;
    std::string out = make_usage(app, name) + "\n" + app->get_description() + "\n";
    out += make_positionals(app);
    std::vector<const CLI::Option*> own = app->get_options([&](const CLI::Option* opt) {
      return opt->nonpositional() && !opt->get_group().empty() && !is_meta(opt) &&
             (top || !is_global(app, opt));
    });
    if (!top && !own.empty()) out += make_group("Options", false, own);
    if (top) out += make_subcommands(app, mode);
    out += make_global_options(root_of(app), top);
    if (top) {
      out +=
          "\nRun 'mamba-asr help SUBCOMMAND' (or 'mamba-asr SUBCOMMAND --help') for its options "
          "and examples.\n";
    }
    return out;
  }

  std::string make_usage(const CLI::App* app, std::string name) const override {
    if (app->get_parent() == nullptr) {
      return "Usage: " + name + " [GLOBAL OPTIONS] SUBCOMMAND [OPTIONS] [ARGS]\n";
    }
    std::string out = "Usage: " + name + " [OPTIONS]";
    for (const CLI::Option* opt : app->get_options(
             [](const CLI::Option* o) { return o->get_positional() && !o->get_group().empty(); })) {
      out += " " + make_option_usage(opt);
    }
    return out + "\n";
  }

  std::string make_subcommands(const CLI::App* app, CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::All) return CLI::Formatter::make_subcommands(app, mode);
    std::string out = "\nSubcommands:\n";
    for (const CLI::App* sub : app->get_subcommands({})) {
      if (sub->get_name().empty() || sub->get_group().empty()) continue;
      const std::string description = sub->get_description();
      // A narrower name column than the options' keeps each summary on one line.
      out += line("  " + sub->get_name(), description.substr(0, description.find('\n')), 14);
    }
    return out;
  }

  std::string make_option(const CLI::Option* opt, bool is_positional) const override {
    return line("  " + make_option_name(opt, is_positional) + make_option_opts(opt),
                make_option_desc(opt));
  }

  // "-m, --model" without CLI11's "{false}" marks of negated flags. Only the first long name is
  // shown: further ones are older spellings (--out for --output), kept working.
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override {
    if (is_positional) return upper(opt->get_name(true, false));
    std::string out;
    for (const auto& s : opt->get_snames()) out += (out.empty() ? "-" : ", -") + s;
    if (!opt->get_lnames().empty()) out += (out.empty() ? "--" : ", --") + opt->get_lnames()[0];
    return out;
  }

  // " TYPE [default]": the type without the validators CLI11 appends to it (ranges and choice
  // lists, which the description gives in words).
  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0) return "";
    std::string type = opt->get_option_text();
    if (type.empty()) {
      type = opt->get_type_name();
      type = type.substr(0, std::min(type.find(':'), type.find(' ')));
      if (type == "INT" || type == "UINT") type = "N";
      if (type == "FLOAT") type = "X";
    }
    std::string out = type.empty() ? "" : " " + type;
    if (opt->get_expected_max() >= CLI::detail::expected_max_vector_size) out += " ...";
    if (!opt->get_default_str().empty()) out += " [" + opt->get_default_str() + "]";
    return out;
  }

  std::string make_option_usage(const CLI::Option* opt) const override {
    std::string out = upper(opt->get_name(true, false));
    if (opt->get_expected_max() >= CLI::detail::expected_max_vector_size) out += "...";
    return opt->get_required() ? out : "[" + out + "]";
  }

 private:
  static std::string upper(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    return s;
  }

  // "  NAME   description", the description wrapped and starting at kNameColumn (on the next
  // line when the name is longer).
  static std::string line(const std::string& name, const std::string& description,
                          size_t column = kNameColumn) {
    if (description.empty()) return name + "\n";
    std::string out = name;
    if (out.size() + 1 > column) {
      out += "\n" + std::string(column, ' ');
    } else {
      out += std::string(column - out.size(), ' ');
    }
    return out + wrap(description, column, kLineWidth) + "\n";
  }

  // Whether `opt` of a subcommand repeats one of the root's global options (train and convert
  // register them again); bench's own --threads (a sweep) is not one.
  static bool is_global(const CLI::App* app, const CLI::Option* opt) {
    const CLI::App* root = root_of(app);
    for (const CLI::Option* g : root->get_options()) {
      if (is_meta(g) || g->get_positional()) continue;
      if (g->get_description() != opt->get_description()) continue;
      for (const auto& l : opt->get_lnames()) {
        if (g->check_lname(l)) return true;
      }
    }
    return false;
  }

  std::string make_global_options(const CLI::App* root, bool top) const {
    std::vector<const CLI::Option*> opts = root->get_options([top](const CLI::Option* opt) {
      return opt->nonpositional() && !opt->get_group().empty() && (top || !is_meta(opt));
    });
    return make_group(top ? "Global options (before or after the subcommand)" : "Global options",
                      false, opts);
  }
};

// The names of `app`'s options, as typed ("--beam", "-m").
std::vector<std::string> option_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : app.get_options()) {
    for (const auto& l : opt->get_lnames()) out.push_back("--" + l);
    for (const auto& s : opt->get_snames()) out.push_back("-" + s);
  }
  return out;
}

}  // namespace

std::shared_ptr<CLI::FormatterBase> make_help_formatter() {
  return std::make_shared<HelpFormatter>();
}

std::string rewrite_help_command(const CLI::App& app, std::vector<std::string>& args) {
  if (args.size() < 2 || args[1] != "help") return "";
  if (args.size() == 2) {
    args = {args[0], "--help"};
    return "";
  }
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), args[2]) == names.end()) {
    return "help: no subcommand '" + args[2] + "'." + did_you_mean(args[2], names);
  }
  args = {args[0], args[2], "--help"};
  return "";
}

std::string unknown_arguments_message(const CLI::App& app, const std::string& what) {
  const CLI::App* target = &app;
  while (!target->get_subcommands().empty()) target = target->get_subcommands().front();
  // The arguments nothing took, in command-line order (CLI11's message lists them reversed).
  const std::vector<std::string> left = app.remaining(true);
  const std::string first = left.empty() ? "" : left.front();
  if (first.empty()) return what;
  if (first[0] != '-') {
    if (target != &app) return what;  // an extra argument, not a name
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    names.push_back("help");
    return "unknown subcommand '" + first + "'." + did_you_mean(first, names);
  }
  const std::string name = first.substr(0, first.find('='));
  std::vector<std::string> names = option_names(*target);
  if (target != &app) {
    const std::vector<std::string> global = option_names(app);
    names.insert(names.end(), global.begin(), global.end());
  }
  const std::string where = target == &app ? "" : " for '" + target->get_name() + "'";
  return "unknown option '" + name + "'" + where + "." + did_you_mean(name, names);
}

}  // namespace masr::cli
