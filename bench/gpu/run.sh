#!/usr/bin/env bash
# The GPU run: every CUDA test, then every benchmark on cuda, in one command of under 10 minutes.
#
#   bash bench/gpu/run.sh [--quick]          on the GPU machine, from a copy of the repository
#                                            root, bench/gpu/wheels/ carried (prepare.sh)
#   TT_GPU_DRY_RUN=1 bash bench/gpu/run.sh   here: the same steps on the CPU, tiny sizes, with
#                                            the Python already set up (PYTHON=..., default
#                                            python3) instead of the wheels
#
# It installs nothing from the network: pip --no-index from bench/gpu/wheels only. Each step has
# its own time budget (timeout), so one slow step cannot eat the others; a failing step is
# recorded and the run goes on. Results go to $OUT (a new temporary folder if unset): while it
# runs, $OUT/all/ (JSON, PNG, one log per step); at the end $OUT holds summary.txt, pytest.log
# and gpu-run.tar.gz (all of $OUT/all), so that few files come back. The summary table is
# printed last. Full run < 9 minutes, --quick < 4. See bench/README.md, "The GPU run".
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD

MODE=full
for arg in "$@"; do
    case $arg in
    --quick) MODE=quick ;;
    *)
        echo "run.sh: unknown argument $arg (use --quick, or TT_GPU_DRY_RUN=1)" >&2
        exit 2
        ;;
    esac
done
DRY=${TT_GPU_DRY_RUN:-0}
[[ $DRY == 1 ]] && MODE=dry
PY=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d)}
ALL=$OUT/all
mkdir -p "$ALL"
SUMMARY=$ALL/steps.tsv
: >"$SUMMARY"
export PYTHONUNBUFFERED=1 MPLBACKEND=Agg TOKENIZERS_PARALLELISM=false
DEVICE=cuda
[[ $MODE == dry ]] && DEVICE=cpu
# Worst cases (every step at its limit): full 35+25+90+100+65+65+70+45+30+40 = 565 s,
# quick 20+25+55+35+20+25+25+15+15+20 = 255 s; the benchmarks stop starting new points sooner.
INSTALL_LIMIT=35 ENV_LIMIT=25
[[ $MODE == quick ]] && INSTALL_LIMIT=20
[[ $MODE == dry ]] && ENV_LIMIT=120 # a busy CPU, not a GPU machine
START=$SECONDS

# step NAME SECONDS COMMAND...: run it under a time limit into $ALL/NAME.log; record the outcome.
# The GPU run takes the steps one by one. The dry run's numbers mean nothing (only that each
# step runs and writes its files), so it runs TT_GPU_JOBS (2) steps at a time, to fit a test's
# time on a small machine.
ORDER=0
JOBS=${TT_GPU_JOBS:-2}
step() {
    ORDER=$((ORDER + 1))
    if [[ $MODE == dry ]]; then
        while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
        run_step "$ORDER" "$@" &
    else
        run_step "$ORDER" "$@"
    fi
}

run_step() {
    local order=$1 name=$2 limit=$3 begin=$SECONDS rc status
    shift 3
    echo "=== $name (limit ${limit}s): $*"
    timeout --kill-after=5 "$limit" "$@" >"$ALL/$name.log" 2>&1
    rc=$?
    case $rc in
    0) status=ok ;;
    124 | 137) status="TIMEOUT after ${limit}s" ;;
    *) status="FAILED rc=$rc" ;;
    esac
    printf '%s\t%s\t%s\t%s\n' "$order" "$name" "$status" "$((SECONDS - begin))" >>"$SUMMARY"
    tail -n 3 "$ALL/$name.log"
    echo "--- $name: $status in $((SECONDS - begin)) s"
}

install() {
    local site=/tmp/tensortext-site wheels=bench/gpu/wheels
    ls "$wheels"/tensortext-*-cp312-*.whl >/dev/null || {
        echo "no $wheels/tensortext-*.whl: run bench/gpu/prepare.sh here and carry $wheels"
        return 1
    }
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "$wheels"/*.whl || return 1
    # Our Python code runs from src/ (this copy of the tree); the extension comes from the
    # wheel, unless csrc/ changed since prepare.sh: then it is built here.
    if [[ $(cat csrc/*.c csrc/*.h setup.py | sha256sum | cut -d' ' -f1) == $(cat "$wheels/csrc.sha256") ]]; then
        cp "$site"/tensortext/bpe/_native*.so src/tensortext/bpe/ || return 1
    else
        echo "csrc/ changed since prepare.sh: building the extension here"
        "$PY" setup.py -q build_ext --inplace || return 1
    fi
    echo "installed into $site: $(ls "$wheels" | tr '\n' ' ')"
}

environment() {
    nvidia-smi || true
    "$PY" - <<'PYTHON'
import torch
import tensortext
import tensortext.bpe.native as native
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0))
print("tensortext", tensortext.__file__, "C encoder", native.native_available())
assert native.native_available(), "the C extension did not load"
PYTHON
}

export -f install environment # timeout runs commands, not functions: bash -c runs these
export PY
if [[ $MODE != dry ]]; then
    export PYTHONPATH=$ROOT/src:/tmp/tensortext-site${PYTHONPATH:+:$PYTHONPATH}
    step install "$INSTALL_LIMIT" bash -c install
fi
step environment "$ENV_LIMIT" bash -c environment

# Every test with a device parameter, on cuda, and every CUDA-only test (names contain "cuda");
# not tests/integrations (Ray is not on the GPU machine).
# Here, the dry run collects one file only: collecting the whole suite costs more than the run.
DEVICE_TESTS=${TT_GPU_DEVICE_TESTS:-tests}
case $MODE in
full) limits=(90 100) examples=20 ;;
quick) limits=(55 35) examples=5 ;;
dry) limits=(120 120) examples=2 DEVICE_TESTS=${TT_GPU_DEVICE_TESTS:-tests/decode/test_beam.py} ;;
esac
export TENSORTEXT_HYPOTHESIS_EXAMPLES=${TENSORTEXT_HYPOTHESIS_EXAMPLES:-$examples}
PYTEST=("$PY" -m pytest -q -rs -p no:cacheprovider)
# --maxfail, not -x: one GPU session must show every failure, not only the first.
step cuda-tests "${limits[0]}" "${PYTEST[@]}" --maxfail=10 tests/test_cuda.py
# shellcheck disable=SC2086 # DEVICE_TESTS may name several paths
step device-tests "${limits[1]}" "${PYTEST[@]}" -k cuda --ignore=tests/test_cuda.py \
    --ignore=tests/integrations \
    --continue-on-collection-errors $DEVICE_TESTS

BENCH=(--device "$DEVICE" --out-dir "$ALL")
case $MODE in
full)
    step bench-bleu 65 "$PY" bench/bench_bleu.py "${BENCH[@]}" --seq-lens 1024 \
        --batches 64 256 1024 --budget 5 --torchmetrics-max-tokens 70000 --time-limit 45
    step bench-bpe 65 "$PY" bench/bench_bpe.py "${BENCH[@]}" --no-extras --skip bpe_openai \
        --batches 16 256 1024 --sizes 1024 4096 --text mixed --repeat 3 --budget 5 --time-limit 45
    step bench-beam 70 "$PY" bench/bench_beam.py "${BENCH[@]}" --models base --beams 4 12 \
        --batches 1 16 64 --corpus-beams 1 4 12 --corpus-batches 1 64 --time-limit 50
    step bench-lmbr 45 "$PY" bench/bench_lmbr.py "${BENCH[@]}" --time-limit 30
    step bench-corpus 30 "$PY" bench/bench_corpus.py "${BENCH[@]}" --mb 8 --workers 1 \
        --repeat 1 --encodings cl100k_base o200k_base
    step bench-metrics 40 "$PY" bench/bench_metrics.py "${BENCH[@]}" --lines 20000 --repeat 3 \
        --budget 4 --time-limit 30
    ;;
quick)
    step bench-bleu 20 "$PY" bench/bench_bleu.py "${BENCH[@]}" --quick --time-limit 10
    step bench-bpe 25 "$PY" bench/bench_bpe.py "${BENCH[@]}" --quick --skip bpe_openai \
        --time-limit 12
    step bench-beam 25 "$PY" bench/bench_beam.py "${BENCH[@]}" --quick --time-limit 12
    step bench-lmbr 15 "$PY" bench/bench_lmbr.py "${BENCH[@]}" --quick --time-limit 8
    step bench-corpus 15 "$PY" bench/bench_corpus.py "${BENCH[@]}" --mb 2 --workers 1 \
        --repeat 1 --encodings cl100k_base
    step bench-metrics 20 "$PY" bench/bench_metrics.py "${BENCH[@]}" --quick --time-limit 12
    ;;
dry)
    step bench-bleu 120 "$PY" bench/bench_bleu.py "${BENCH[@]}" --threads 1 --batches 2 \
        --seq-lens 16 --repeat 1 --warmup 1 --budget 0.1 --impls nltk ours-nltk
    step bench-bpe 120 "$PY" bench/bench_bpe.py "${BENCH[@]}" --threads 1 --no-extras \
        --skip hf_tokenizers bpe_openai quicktok --encodings cl100k_base --batches 2 --sizes 64 \
        --text mixed --repeat 1 --budget 0.1
    step bench-beam 120 "$PY" bench/bench_beam.py "${BENCH[@]}" --threads 1 --models tiny \
        --sweep-models tiny --target-batch 2 --target-beams 2 --beams 2 --sweep-batch 2 \
        --batches 2 --sweep-beam 2 --corpus-beams 2 --corpus-beam-batches 2 --corpus-batches 2 \
        --sentences 4 --repeat 1 --corpus-repeat 1 --warmup 1 --budget 0.1 --min-repeat 1
    step bench-lmbr 120 "$PY" bench/bench_lmbr.py "${BENCH[@]}" --threads 1 --quick \
        --parts posteriors,step,mbr --batch 2 --hypotheses 4 --candidates 3
    step bench-corpus 120 "$PY" bench/bench_corpus.py "${BENCH[@]}" --mb 0.02 --workers 1 \
        --repeat 1 --encodings cl100k_base --no-plot
    step bench-metrics 120 "$PY" bench/bench_metrics.py "${BENCH[@]}" --threads 1 --quick \
        --parts chrf,pairwise,rouge --pairs 2 --chars 40 --tokens 16 --sentences 2 \
        --candidates 3 --repeat 1 --no-plot
    ;;
esac

wait
# The pytest log and the packed results stay at the top of $OUT; the rest is in the archive.
cat "$ALL"/cuda-tests.log "$ALL"/device-tests.log >"$OUT/pytest.log" 2>/dev/null
"$PY" bench/gpu/summary.py "$ALL" --wall "$((SECONDS - START))" --mode "$MODE" |
    tee "$OUT/summary.txt"
outcome=$? # summary.py exits 1 when a step was not ok
tar -czf "$OUT/gpu-run.tar.gz" -C "$OUT" all && rm -rf "$ALL"
echo "results in $OUT: $(ls "$OUT" | tr '\n' ' ')"
exit "$outcome"
