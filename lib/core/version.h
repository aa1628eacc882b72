// lib/core/version.h
// Build identity: the mamba-asr version and the git commit it was built from.
#pragma once

namespace masr {

const char* version_string();  // e.g. "0.1.0"
const char* git_commit();  // short hash, with "-dirty" for a modified tree; "unknown" outside git

}  // namespace masr
