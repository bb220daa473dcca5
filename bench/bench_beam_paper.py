"""The paper's Figures 2-3 (Iglesias et al. 2018) with the bundled translator: the ``bundled`` part.

``tensortext.decode.translate`` with ``tensortext.models.bundled.load_bundled_translator()`` on its
300 held-out sentences: words/min against beam size with sentence batches of 1 (beam-only
batching) and 64 (Figure 2), and against sentences per batch, sorted by length or not (Figure 3);
the corpus BLEU of every output, and whether sentence batching changed any translation.

A module of bench_beam.py, not a script: bench_beam.py runs this part after its ``hf`` part and
writes both into one ``beam-<device-slug>.json``. This part alone, added to an earlier result::

    PYTHONPATH=src python bench/bench_beam.py --parts bundled --device cpu --threads 1 --merge
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from importlib import resources
from typing import Any

import torch
from torch import Tensor

import common

DEMO = "data/demo"  # the bundled test set, inside the tensortext package


def load_corpus(dev: torch.device, limit: int | None) -> tuple[Any, list[str], list[str]] | str:
    """(translator, source lines, reference lines), or the reason it is unavailable."""
    try:
        from tensortext.models.bundled import load_bundled_translator

        demo = resources.files("tensortext") / DEMO
        src = (demo / "translate.src").read_text(encoding="utf-8").splitlines()
        ref = (demo / "translate.ref").read_text(encoding="utf-8").splitlines()
        model = load_bundled_translator(dev)
    except Exception as exc:
        return f"bundled translator or its test set unavailable: {type(exc).__name__}: {exc}"
    if len(src) != len(ref):
        return f"translate.src has {len(src)} lines but translate.ref {len(ref)}"
    if limit:
        src, ref = src[:limit], ref[:limit]
    return model, src, ref


def bundled_weights_sha256() -> str | None:
    """The checksum in the model's config.json: which trained weights were measured."""
    try:
        text = (resources.files("tensortext") / "data/model/config.json").read_text()
        return str(json.loads(text).get("weights_sha256"))
    except (OSError, ValueError):
        return None


def corpus_max_new_tokens(model: Any) -> Callable[[int], int]:
    """``translate``'s default ``2 * longest + 10``, capped by the model's positions."""
    cap = model.config.max_len - 1  # the start token plus at most max_len - 1 generated tokens
    return lambda longest: min(2 * longest + 10, cap)


def corpus_grid(args: argparse.Namespace) -> list[tuple[int, int, bool, str]]:
    """(beams, sentences per batch, sorted, series) points, in run order, without duplicates."""
    points = {(k, n, True): "figure 2" for n in args.corpus_beam_batches for k in args.corpus_beams}
    for s in (True, False):
        for n in args.corpus_batches:
            points.setdefault((args.sweep_beam, n, s), "figure 3")
    return [(k, n, s, series) for (k, n, s), series in points.items()]


def run_corpus_point(
    model: Any, src: Any, ref: Any, beams: int, sentences: int, sort: bool,
    args: argparse.Namespace, dev: torch.device,
) -> tuple[dict[str, Any], list[tuple[int, ...]]]:  # fmt: skip
    """One ``translate`` call over the whole test set per timed call; the row and the outputs."""
    from tensortext.bleu import corpus_bleu
    from tensortext.decode import translate

    def call() -> Any:
        with torch.inference_mode():
            return translate(model, src.ids, src.lengths, num_beams=beams,
                             max_sentences=sentences, sort_by_length=sort,
                             max_new_tokens=corpus_max_new_tokens(model))  # fmt: skip

    row: dict[str, Any] = {"beams": beams, "sentences_per_batch": sentences, "sorted": sort,
                           "status": "ok"}  # fmt: skip
    try:
        # A whole corpus per call (300 sentences in 300 / n batches) is already an average, so
        # a call longer than --budget is timed once; the model was warmed up before the grid.
        # The peak is over the timed calls (memory is freed between calls).
        with common.PeakMemory(dev) as pm:
            timing = common.time_fn(call, warmup=0, repeat=args.corpus_repeat, device=dev,
                                    budget_s=args.budget, min_repeat=1)  # fmt: skip
    except Exception as exc:
        row.update(status="error", reason=f"{type(exc).__name__}: {exc}")
        return row, []
    out = timing.value
    best = out.without_eos(rank=0)  # Padded: ids [N, T], lengths [N] before the EOS
    bleu = corpus_bleu(best, ref)  # Padded hypotheses and references
    n_words = int(best.lengths.sum())
    row.update(timing.as_dict())
    row.update(
        peak_extra_mib=pm.extra_mib,
        sentences=int(src.ids.shape[0]),
        words=n_words,
        words_per_min=60.0 * n_words / timing.median_s,
        sentences_per_s=src.ids.shape[0] / timing.median_s,
        bleu=100.0 * float(bleu),
        # cut at max_new_tokens without EOS: such outputs depend on the batch's longest source
        outputs_without_eos=int((best.lengths == out.lengths[:, 0]).sum()),
        loadavg_1m_after=common.loadavg_1m(),
    )
    return row, [tuple(r) for r in best.tolist()]


def corpus_info(translator: Any, src_lines: list[str], src: Any, ref: Any) -> dict[str, Any]:
    return {
        "status": "ok",
        "model": "tensortext.models.bundled.load_bundled_translator()",
        "weights_sha256": bundled_weights_sha256(),
        "parameters": sum(p.numel() for p in translator.parameters()),
        "test_set": "tensortext/data/demo/translate.src / translate.ref",
        "sentences": len(src_lines),
        "source_tokens": int(src.lengths.sum()),
        "reference_words": int(ref.lengths.sum()),
        "translate_settings": "translate(model, src_ids, lengths, num_beams=K, max_sentences=n, "
        "sort_by_length=sorted, max_new_tokens=min(2 * longest + 10, max_len - 1)); "
        "length_penalty 1.0, early_stopping False, refill",
        "bleu": "tensortext.corpus_bleu on target word IDs (tokenize_target of the references; "
        "hypotheses cut before EOS), sacrebleu-compatible, x100",
        "results": [],
        "batch_invariance": {},
    }


def warm_up(translator: Any, src: Tensor, lengths: Tensor) -> None:
    """First calls, allocator, kernels: before the grid, on 16 sentences."""
    from tensortext.decode import translate

    n = min(16, len(lengths))
    with torch.inference_mode():
        for k in (1, 4):
            translate(translator, src[:n], lengths[:n], num_beams=k, max_sentences=n,
                      max_new_tokens=corpus_max_new_tokens(translator))  # fmt: skip
    common.synchronize(src.device)


def run_corpus_part(args: argparse.Namespace, run: common.Run, corpus: dict[str, Any],
                    save: Callable[[], Any]) -> None:  # fmt: skip
    """Figures 2-3 with the bundled translator; fills ``corpus`` in place."""
    loaded = load_corpus(run.device, args.sentences or None)
    if isinstance(loaded, str):
        print(f"bundled part skipped: {loaded}", flush=True)
        corpus.update(status="unavailable", reason=loaded)
        return
    translator, src_lines, ref_lines = loaded
    src = translator.tokenize_source(src_lines).to(run.device)  # Padded: ids [N, S], lengths
    ref = translator.tokenize_target(ref_lines).to(run.device)
    corpus.update(corpus_info(translator, src_lines, src, ref))
    print(
        f"\nbundled translator ({corpus['parameters'] / 1e6:.2f}M parameters), "
        f"{len(src_lines)} sentences, {corpus['source_tokens']} source tokens"
    )
    warm_up(translator, src.ids, src.lengths)
    first_output: dict[int, list[tuple[int, ...]]] = {}
    for k, n, s, series in corpus_grid(args):
        outputs: list[tuple[int, ...]] = []
        if run.out_of_time():
            row = {"beams": k, "sentences_per_batch": n, "sorted": s,
                   **common.skipped_fields(args.time_limit)}  # fmt: skip
        else:
            row, outputs = run_corpus_point(translator, src, ref, k, n, s, args, run.device)
        row["series"] = series
        if outputs:
            # Sentence batching should not change a translation (paper, 4.5); float rounding in
            # differently shaped batches could flip near-ties, and so could a length cap that
            # depends on the batch's longest source (only for outputs cut without EOS).
            base = first_output.setdefault(k, outputs)
            differ = sum(a != b for a, b in zip(base, outputs, strict=True))
            row["outputs_differing_from_first_run_at_this_k"] = differ
            invariance = corpus["batch_invariance"]
            invariance[str(k)] = max(invariance.get(str(k), 0), differ)
        corpus["results"].append(row)
        if row["status"] == "ok":
            print(f"K={k:>2} sentences/batch={n:>3} {'sorted' if s else 'unsorted':>8}: "
                  f"{row['words_per_min']:>10,.0f} words/min  {row['median_s']:.2f} s  "
                  f"BLEU {row['bleu']:.2f}  (n={row['n_samples']})", flush=True)  # fmt: skip
        else:
            print(f"K={k} n={n} sorted={s}: {row['status']} {row.get('reason')}", flush=True)
        save()


# --------------------------------------------------------------------------- reporting


def bleu_cell(rows: list[dict[str, Any]]) -> str:
    """One BLEU if batching left the output unchanged, else every distinct value, in order."""
    values = list(dict.fromkeys(f"{r['bleu']:.2f}" for r in rows))
    return " / ".join(values) if values else "-"


def figure2_table(at: dict[tuple[int, int, bool], dict[str, Any]]) -> str:
    fig2 = sorted({(k, n) for k, n, s in at if s})
    # Figure 2's series: the batch sizes measured at more than one beam size.
    batches = sorted({n for _, n in fig2 if sum(m == n for _, m in fig2) > 1})
    beams = sorted({k for k, n in fig2 if n in batches})
    if not beams:
        return ""
    header = ["K", *(f"{n} sent/batch" for n in batches), "BLEU",
              f"peak MiB ({batches[-1]} sent/batch)"]  # fmt: skip
    rows = []
    for k in beams:
        measured = [at[(k, n, True)] for n in batches if (k, n, True) in at]
        cells = [f"{at[(k, n, True)]['words_per_min']:,.0f}" if (k, n, True) in at else "-"
                 for n in batches]  # fmt: skip
        peak = common.fmt(measured[-1].get("peak_extra_mib"), ".0f")
        rows.append([str(k), *cells, bleu_cell(measured), peak])
    table = common.markdown_table(header, rows, "r" * len(header))
    return "Words/min vs beam size (sorted; Figure 2), BLEU of the output:\n\n" + table


def figure3_table(at: dict[tuple[int, int, bool], dict[str, Any]], k: int) -> str:
    fmt, rows = common.fmt, []
    for n in sorted({n for kk, n, _ in at if kk == k}):
        s, u = at.get((k, n, True)), at.get((k, n, False))
        ratio = s["words_per_min"] / u["words_per_min"] if s and u and u["words_per_min"] else None
        rows.append([str(n), fmt(s and s["words_per_min"], ",.0f"),
                     fmt(u and u["words_per_min"], ",.0f"), fmt(ratio, ".2f"),
                     bleu_cell([r for r in (s, u) if r])])  # fmt: skip
    header = ["sentences/batch", "sorted", "unsorted", "sorted/unsorted", "BLEU"]
    table = common.markdown_table(header, rows, "rrrrr")
    return f"\nWords/min vs sentences per batch, K={k} (Figure 3):\n\n" + table


def corpus_tables(rows: list[dict[str, Any]]) -> str:
    ok = [r for r in rows if r["status"] == "ok"]
    at = {(r["beams"], r["sentences_per_batch"], r["sorted"]): r for r in ok}
    out = [figure2_table(at)] if figure2_table(at) else []
    out += [figure3_table(at, k) for k in sorted({r["beams"] for r in ok if not r["sorted"]})]
    return "\n".join(out)


def plot_figure2(ax: Any, corpus: list[dict[str, Any]]) -> None:
    bleu_ax = None
    for n in sorted({r["sentences_per_batch"] for r in corpus if r["sorted"]}):
        pts = sorted(((r["beams"], r) for r in corpus if r["sorted"]
                      and r["sentences_per_batch"] == n), key=lambda p: p[0])  # fmt: skip
        if len(pts) < 2:
            continue
        label = f"{n} sentence{'s' if n > 1 else ''}/batch" + (
            " (beam-only batching)" if n == 1 else "")  # fmt: skip
        ax.plot([p[0] for p in pts], [p[1]["words_per_min"] for p in pts], marker="o",
                color=f"C{len(ax.lines)}", label=label)  # fmt: skip
        if bleu_ax is None:
            # BLEU depends on the beam size only (batching does not change the output).
            bleu_ax = ax.twinx()
            bleu_ax.plot([p[0] for p in pts], [p[1]["bleu"] for p in pts], ":", color="0.4",
                         marker=".")  # fmt: skip
            bleu_ax.set_ylabel("BLEU (grey, dotted)")
    ax.set_yscale("log")
    ax.set_xlabel("beam size")
    ax.set_title("bundled model: speed vs beam size (Fig. 2)", fontsize=10)
    if ax.lines:
        ax.legend(fontsize=7, loc="center right")


def plot_figure3(ax: Any, corpus: list[dict[str, Any]], beam: int) -> None:
    for sort, style in ((True, "-"), (False, "--")):
        pts = sorted((r["sentences_per_batch"], r["words_per_min"]) for r in corpus
                     if r["sorted"] == sort and r["beams"] == beam)  # fmt: skip
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle=style, marker="o",
                    label="sorted by length" if sort else "unsorted")  # fmt: skip
    ns = sorted({r["sentences_per_batch"] for r in corpus if r["beams"] == beam})
    if ns:
        common.log2_xticks(ax, ns)
    ax.set_xlabel("sentences per batch")
    ax.set_title(f"bundled model: sentence batching, beam {beam} (Fig. 3)", fontsize=10)
    if ax.lines:
        ax.legend(fontsize=7)


def plot_corpus(axes: list[Any], payload: dict[str, Any]) -> None:
    """Figures 2 and 3 on two panels."""
    part = payload.get("corpus", {})
    corpus = [r for r in part.get("results", []) if r["status"] == "ok"]
    plot_figure2(axes[0], corpus)
    plot_figure3(axes[1], corpus, part.get("run", payload)["config"]["sweep_beam"])
    for ax in axes:
        ax.set_ylabel("output words / min")
        ax.grid(True, which="both", alpha=0.3)
