#include "tensorboard_util.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "common/fs.h"
#include "process_util.h"
#include "test_util.h"

namespace gnn::test {

namespace fs = std::filesystem;

namespace {

bool ImportsTensorBoard(const std::string& python) {
  return PathExists(python) &&
         test::RunProcess({python, "-c", "import tensorboard.backend.event_processing"}, 120)
                 .exit_code == 0;
}

std::string LastLine(const std::string& text) {
  std::string t = text;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const size_t nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Makes a venv with `tensorboard` at `tmp` (empty on success, else why not).
std::string BuildVenv(const std::string& tmp) {
  auto venv = test::RunProcess({"/usr/bin/python3", "-m", "venv", tmp}, 300);
  if (venv.exit_code != 0) return "python3 -m venv failed: " + LastLine(venv.err);
  auto pip = test::RunProcess(
      {tmp + "/bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
       "--retries", "1", "--timeout", "30", "tensorboard"},
      1200);
  if (pip.exit_code != 0) return "pip install tensorboard failed: " + LastLine(pip.err);
  return "";
}

}  // namespace

// A Python that imports `tensorboard`: a venv made once in the user's cache
// folder and reused. Returns "" and says why in *why when there is none
// (no python3, no network for pip). Concurrent test processes each build
// in a temporary folder; the first rename wins.
std::string TensorBoardPython(std::string* why) {
  if (!PathExists("/usr/bin/python3")) {
    *why = "/usr/bin/python3 not installed";
    return "";
  }
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string cache = xdg && *xdg ? xdg : std::string(home ? home : "/tmp") + "/.cache";
  const std::string venv = cache + "/gnn-test-venv-tb", python = venv + "/bin/python";
  if (ImportsTensorBoard(python)) return python;
  MakeDirs(cache);
  const std::string tmp = MakeUniqueDir(venv + ".tmp.");
  *why = BuildVenv(tmp);
  if (why->empty()) {
    if (PathExists(venv) && !ImportsTensorBoard(python)) RemoveAllQuietly(venv);  // broken
    std::error_code ec;
    fs::rename(tmp, venv, ec);  // fails when another process got there first
  }
  RemoveAllQuietly(tmp);
  if (why->empty() && ImportsTensorBoard(python)) return python;
  if (why->empty()) *why = "tensorboard installed in " + venv + " but does not import";
  return "";
}

}  // namespace gnn::test
