#!/usr/bin/env bash
# The test suite and the benchmarks on a machine with an NVIDIA GPU, in one run that always ends,
# with one report.
#
#   bash scripts/gpu_check.sh [suite|bench|all]      (default: all)
#
# CUBELAB_GPU_FILES="tests/test_a.py ..." and CUBELAB_GPU_BENCH="peers ..." narrow a run to those
# test files and benchmarks (device time is scarce); CUBELAB_GPU_JOBS=N runs N test files at once. The suite runs every `client` test on both
# GPU runtimes and the CPU one (CUBELAB_TEST_RUNTIMES, default wgpu,cpu,cuda; the CUDA runtime
# is expected to start: CUBELAB_EXPECT_CUDA=1) and the report counts each runtime apart.
# A test that errors (in a fixture, at collection) counts as failed, as does a killed file.
# Why it exists: a suite run on the H200 once returned nothing at all within its limit, and the
# machine then ran nothing until it was given back. A run that cannot end tells nothing, so here
# every test file runs in its own process under a wall-clock kill, every test under a per-test
# timeout that dumps every thread's stack (pytest-timeout, thread method), the GPU's state is read
# between files (a busy GPU after a file ended means a kernel is still running on it), and each
# line of the report is written as soon as it is known — what a killed run leaves is still read.
#
# It expects what `benchmarks/README.md` describes for the workplace's GPU machine: Vulkan loader
# .debs in `.gl/` and wheels (wgpu & co) in `.whl/`, both optional (skipped when absent), and the
# NVIDIA Vulkan ICD. The report goes to $OUT (the device tool's folder) or artifacts/gpu/.
set -u
cd "$(dirname "$0")/.."
ROOT="$PWD"
WHAT="${1:-all}"
DEST="${OUT:-$ROOT/artifacts/gpu}"
mkdir -p "$DEST"
REPORT="$DEST/gpu_report.md"
LOGS="$DEST/logs"
mkdir -p "$LOGS"
PER_TEST="${CUBELAB_GPU_TEST_TIMEOUT:-90}"   # seconds one test may take before its stacks are dumped
PER_FILE="${CUBELAB_GPU_FILE_TIMEOUT:-240}"  # seconds one test file's process may live
SUITE_BUDGET="${CUBELAB_GPU_SUITE_BUDGET:-420}"  # seconds for the whole suite before the rest is listed as not run
PY="${PYTHON:-python3}"

say() { echo "$*" | tee -a "$REPORT"; }
gpu_state() {
  command -v nvidia-smi >/dev/null 2>&1 || { echo "no nvidia-smi"; return; }
  timeout 20 nvidia-smi --query-gpu=utilization.gpu,memory.used,pstate --format=csv,noheader 2>&1 | head -1
}

: > "$REPORT"
say "# cubelab GPU check — $(date -u '+%Y-%m-%d %H:%M UTC')"
say ""

# -- environment: loaders, wheels, the NVIDIA ICD --------------------------------------------------
if compgen -G ".gl/*.deb" >/dev/null; then
  for f in .gl/*.deb; do dpkg -x "$f" / ; done
  ldconfig
fi
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/cubelab-site .whl/*.whl >"$LOGS/pip.log" 2>&1 || { say "wheel install failed: see logs/pip.log"; }
  export PYTHONPATH="/tmp/cubelab-site:$ROOT"
else
  export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi
ICD=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[ -f "$ICD" ] && export VK_DRIVER_FILES="$ICD"
export XDG_RUNTIME_DIR="$(mktemp -d)"
export PYTHONUNBUFFERED=1 CUBELAB_EXPECT_WGPU=1 CUBELAB_GPU_CHECK=1
export CUBELAB_TEST_RUNTIMES="${CUBELAB_TEST_RUNTIMES:-wgpu,cpu,cuda}"
case ",$CUBELAB_TEST_RUNTIMES," in *,cuda,*) export CUBELAB_EXPECT_CUDA=1 ;; esac

say "- host: $(nproc) cores, $("$PY" --version 2>&1)"
if command -v nvidia-smi >/dev/null 2>&1; then
  say "- GPU: $(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
fi
adapter=$(timeout 60 "$PY" - <<'PY' 2>&1 | tail -1
import cubelab
d = cubelab.Device.wgpu()
info = d.server.adapter_info if hasattr(d.server, "adapter_info") else {}
print(d.client().name(), "|", d.describe() if hasattr(d, "describe") else info)
PY
)
say "- adapter: $adapter"
cuda=$(timeout 60 "$PY" -c 'import cubelab; c = cubelab.Device.cuda().client(); print(c.name(), "|", c.properties().adapter, "|", c.properties().backend)' 2>&1 | tail -1)
say "- CUDA runtime: $cuda"
say "- GPU state before: $(gpu_state)"
say ""

# -- the suite: one process per file, per-test timeouts, GPU state between files ------------------
run_suite() {
  say "## Test suite (one process per file; per-test timeout ${PER_TEST}s, per-file ${PER_FILE}s)"
  say ""
  say "| file | result | seconds | GPU after (util, mem, pstate) |"
  say "|---|---|---|---|"
  local start=$SECONDS total_pass=0 total_fail=0 total_skip=0 hung=""
  # Browser and notebook tests need JupyterLab and a browser, which the GPU image does not carry;
  # the set-up and Binder tests install from the package registries (apt, PyPI), which the GPU
  # machine cannot reach. They are listed as not run, with that reason.
  local files offline="test_binder.py test_setup_scripts.py"
  files=${CUBELAB_GPU_FILES:-$(ls tests/test_*.py tests/zoo/test_*.py 2>/dev/null | grep -v -e test_notebooks -e browser $(printf -- '-e %s ' $offline))}
  if [ -z "${CUBELAB_GPU_FILES:-}" ]; then
    for f in $offline; do say "| tests/$f | not run: installs from apt/PyPI, which this machine cannot reach | | |"; done
  fi
  # One file: its log, JUnit XML and a row file ("rc seconds") in logs/. Files run JOBS at a
  # time (CUBELAB_GPU_JOBS, default 1): the GPU machine has 16 cores and the GPU is idle most of
  # a test's time, so a parallel run buys device time; the rows are reported in file order.
  run_file() {
    local f=$1 name log t0=$SECONDS
    name=$(basename "$f" .py); log="$LOGS/$name.log"
    if (( SECONDS - SUITE_START > SUITE_BUDGET )); then echo "budget 0" >"$LOGS/$name.row"; return; fi
    timeout -k 15 "$PER_FILE" "$PY" -X faulthandler -m pytest -q -p no:cacheprovider \
      -p timeout --timeout="$PER_TEST" --timeout-method=thread -o addopts="" \
      --junitxml="$LOGS/$name.xml" -rs "$f" >"$log" 2>&1
    echo "$? $((SECONDS - t0)) $(gpu_state)" >"$LOGS/$name.row"
  }
  export -f run_file gpu_state
  export LOGS PER_FILE PER_TEST PY SUITE_BUDGET
  export SUITE_START=$SECONDS
  printf '%s\n' $files | xargs -P "${CUBELAB_GPU_JOBS:-1}" -I{} bash -c 'run_file "$@"' _ {}
  for f in $files; do
    local name log rc secs state
    name=$(basename "$f" .py); log="$LOGS/$name.log"
    read -r rc secs state <"$LOGS/$name.row" 2>/dev/null || { rc=missing; secs=0; state=""; }
    if [ "$rc" = budget ]; then
      say "| $f | not run (suite budget of ${SUITE_BUDGET}s spent) | | |"
      continue
    fi
    local line
    line=$(grep -E '^[0-9]+ (passed|failed|skipped|error)|passed|failed|skipped|error' "$log" | tail -1)
    [ "$rc" = 124 ] || [ "$rc" = 137 ] && { line="KILLED after ${PER_FILE}s (stacks in logs/)"; hung="$hung $f"; }
    local p s fl er
    p=$(echo "$line" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+'); total_pass=$((total_pass + ${p:-0}))
    fl=$(echo "$line" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+'); total_fail=$((total_fail + ${fl:-0}))
    # an error (fixture, collection) is a failure too, and so is a file that never reported
    er=$(echo "$line" | grep -oE '[0-9]+ errors?' | grep -oE '[0-9]+'); total_fail=$((total_fail + ${er:-0}))
    if [ -z "$p$fl$er" ] && ! echo "$line" | grep -qE '[0-9]+ (skipped|deselected)'; then total_fail=$((total_fail + 1)); fi
    s=$(echo "$line" | grep -oE '[0-9]+ skipped' | grep -oE '[0-9]+'); total_skip=$((total_skip + ${s:-0}))
    say "| $f | ${line:-rc=$rc} | $secs | $state |"
  done
  say ""
  say "Suite: **${total_pass} passed, ${total_fail} failed, ${total_skip} skipped** in $((SECONDS - start)) s.${hung:+ Killed files:$hung}"
  say ""
  # per runtime, from the JUnit files: a test id's parameters name its runtime ([cuda], [wgpu-f32])
  "$PY" - "$LOGS" <<'PY' | tee -a "$REPORT"
import collections, glob, re, sys
import xml.etree.ElementTree as ET
runtimes = ("wgpu", "cpu", "cuda")
counts = collections.defaultdict(collections.Counter)
for path in glob.glob(f"{sys.argv[1]}/*.xml"):
    try:
        cases = ET.parse(path).getroot().iter("testcase")
    except ET.ParseError:
        continue
    for case in cases:
        m = re.search(r"\[(.*)\]$", case.get("name", ""))
        params = m.group(1).split("-") if m else []
        rt = next((p for p in params if p in runtimes), "not per runtime")
        kinds = {c.tag for c in case}
        verdict = ("failed" if kinds & {"failure", "error"} else
                   "skipped" if "skipped" in kinds else "passed")
        counts[rt][verdict] += 1
print("| runtime | passed | failed (errors included) | skipped |")
print("|---|---|---|---|")
for rt in (*runtimes, "not per runtime"):
    c = counts.get(rt)
    if c:
        print(f"| {rt} | {c['passed']} | {c['failed']} | {c['skipped']} |")
print()
PY
  grep -h -A3 "^SKIPPED\|^FAILED\|Timeout" "$LOGS"/test_*.log 2>/dev/null | head -60 > "$LOGS/problems.txt"
}

run_bench() {
  say "## Benchmarks"
  say ""
  for b in ${CUBELAB_GPU_BENCH:-loop_guard launch_overhead bandwidth peers cuda_launch_cost cpu_runtime compile_time}; do
    [ -f "benchmarks/$b.py" ] || continue
    local t0=$SECONDS
    timeout -k 10 240 "$PY" "benchmarks/$b.py" >"$LOGS/bench_$b.log" 2>&1
    local rc=$?
    say "### $b (rc=$rc, $((SECONDS - t0)) s)"
    say ""
    cat "$LOGS/bench_$b.log" >> "$REPORT"
    say ""
  done
}

case "$WHAT" in
  suite) run_suite ;;
  bench) run_bench ;;
  all) run_suite; run_bench ;;
  *) echo "usage: $0 [suite|bench|all]" >&2; exit 2 ;;
esac
say "- GPU state at the end: $(gpu_state)"
