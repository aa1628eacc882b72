// lib/train/local_launcher.cpp
// fork + exec of the ranks, signal forwarding, and fail-fast supervision.
#include "train/local_launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/log.h"

namespace masr::train {
namespace {

// The ranks' pids, for the signal handler (only async-signal-safe calls there: kill).
constexpr int kMaxRanks = 1024;
volatile pid_t g_ranks[kMaxRanks];
volatile sig_atomic_t g_rank_count = 0;

void forward_signal(int signal) {
  for (int i = 0; i < g_rank_count; ++i) {
    if (g_ranks[i] > 0) kill(g_ranks[i], signal);
  }
}

pid_t start_rank(const std::vector<std::string>& argv, int rank, int nproc, int port) {
  const pid_t pid = fork();
  if (pid < 0) throw_io_error(std::string("train --nproc: fork failed: ") + std::strerror(errno));
  if (pid > 0) return pid;
  // The child: only exec (or report and _exit) from here.
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
  setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv("/proc/self/exe", args.data());
  const std::string message = "train --nproc: cannot exec " + argv[0] + ": " + std::strerror(errno);
  if (write(STDERR_FILENO, message.c_str(), message.size()) < 0) {
  }
  _exit(127);
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

// Sends SIGTERM to the ranks still running, SIGKILL to those left after a grace period; reaps all.
void stop_ranks(std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    if (pid > 0) kill(pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (pid_t& pid : pids) {
    while (pid > 0) {
      int status = 0;
      const pid_t done = waitpid(pid, &status, WNOHANG);
      if (done == pid || (done < 0 && errno != EINTR)) {
        pid = 0;
      } else if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        pid = 0;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
}

}  // namespace

int free_local_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw_io_error(std::string("train --nproc: socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t length = sizeof(addr);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) == 0;
  close(fd);
  if (!ok) throw_io_error(std::string("train --nproc: no free port: ") + std::strerror(errno));
  return ntohs(addr.sin_port);
}

int run_local_ranks(int nproc, const std::vector<std::string>& argv) {
  if (nproc < 1 || nproc > kMaxRanks) {
    throw Error(ErrorKind::kUsage, "train: --nproc " + std::to_string(nproc) +
                                       " is out of range (1 to " + std::to_string(kMaxRanks) + ")");
  }
  const int port = free_local_port();
  MASR_LOG_INFO("train: starting %d ranks (MASTER_ADDR=127.0.0.1 MASTER_PORT=%d)", nproc, port);
  std::vector<pid_t> pids;
  for (int r = 0; r < nproc; ++r) {
    pids.push_back(start_rank(argv, r, nproc, port));
    g_ranks[r] = pids.back();
    g_rank_count = r + 1;
  }
  struct sigaction action {};
  action.sa_handler = forward_signal;
  sigemptyset(&action.sa_mask);
  struct sigaction old_int {
  }, old_term{};
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  int remaining = nproc, interrupted = 0;
  std::string failure;
  while (remaining > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int rank = 0;
    while (rank < nproc && pids[static_cast<size_t>(rank)] != pid) ++rank;
    if (rank == nproc) continue;  // not one of ours
    pids[static_cast<size_t>(rank)] = 0, g_ranks[rank] = 0, --remaining;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 130) {
      ++interrupted;  // stopped on a forwarded signal after writing its checkpoint
      continue;
    }
    failure = "train: rank " + std::to_string(rank) + " of " + std::to_string(nproc) + " (pid " +
              std::to_string(pid) + ") " + describe_status(status) +
              "; the other ranks were stopped (its messages are above)";
    stop_ranks(pids);
    break;
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  g_rank_count = 0;
  if (!failure.empty()) throw Error(ErrorKind::kInput, failure);
  return interrupted > 0 ? 130 : 0;
}

}  // namespace masr::train
