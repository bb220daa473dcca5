"""``tensortext translate`` with a Hugging Face model directory and with the bundled model."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    MarianConfig,
    MarianMTModel,
    PreTrainedTokenizerFast,
)

from tensortext.cli import main

WORDS = [f"w{i}" for i in range(40)]


def _word_tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer over WORDS: EOS 0, unknown 1, the words 2..41, padding 42."""
    vocab = {"</s>": 0, "<unk>": 1, **{w: i + 2 for i, w in enumerate(WORDS)}, "<pad>": 42}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<pad>", eos_token="</s>"
    )


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Marian model with a word-level tokenizer, saved like a hub checkpoint."""
    fast = _word_tokenizer()
    torch.manual_seed(0)
    model = MarianMTModel(
        MarianConfig(
            vocab_size=43, d_model=16, encoder_layers=1, decoder_layers=1,
            encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
            decoder_ffn_dim=32, max_position_embeddings=64, pad_token_id=42, eos_token_id=0,
            decoder_start_token_id=42,
        )
    )  # fmt: skip
    with torch.no_grad():  # peaky outputs, so that hypotheses differ and some end early
        model.lm_head.weight.mul_(8)
    directory = tmp_path_factory.mktemp("marian")
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def causal_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Llama-style decoder-only model with the same word-level tokenizer."""
    fast = _word_tokenizer()
    torch.manual_seed(0)
    model = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=43, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
            bos_token_id=0, eos_token_id=0, pad_token_id=42,
        )
    )  # fmt: skip
    with torch.no_grad():  # peaky outputs, so that hypotheses differ and some end early
        model.lm_head.weight.mul_(8)
    directory = tmp_path_factory.mktemp("llama")
    model.save_pretrained(directory)
    fast.save_pretrained(directory)
    return directory


def run_cli(*argv: str) -> str:
    out = io.StringIO()
    assert main(list(argv), stdout=out) == 0
    return out.getvalue()


SOURCES = ["w1 w2 w3", "w4", "w5 w6 w7 w8 w9", "w10 w11", "w12 w13 w14 w15"]


def _assert_cli_equals_generate(
    model_dir: Path, tmp_path: Path, auto_class: str, max_new_tokens: int, batch_sentences: int
) -> None:
    """``translate --nbest 2 -k 3`` over SOURCES, in batches, equals transformers'
    ``model.generate`` on each sentence alone: texts, and scores (``sequences_scores``)."""
    src = tmp_path / "src.txt"
    src.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    text = run_cli(
        "translate", "-m", str(model_dir), "-i", str(src), "-k", "3",
        "--max-new-tokens", str(max_new_tokens), "--nbest", "2",
        "--batch-sentences", str(batch_sentences), "--device", "cpu", "-q",
    )  # fmt: skip
    lines = text.splitlines()
    assert len(lines) == 2 * len(SOURCES)

    import transformers

    model = getattr(transformers, auto_class).from_pretrained(model_dir).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
    for i, source in enumerate(SOURCES):
        encoded = tokenizer([source], return_tensors="pt")
        out = model.generate(**encoded, num_beams=3, num_return_sequences=2, do_sample=False,
                             max_new_tokens=max_new_tokens, output_scores=True,
                             return_dict_in_generate=True)  # fmt: skip
        # A decoder-only model's sequences start with the prompt; a seq2seq one's with the
        # decoder start token, which skip_special_tokens drops.
        prompt = 0 if model.config.is_encoder_decoder else encoded["input_ids"].shape[1]
        for r in range(2):
            ids = out.sequences[r, prompt:]
            expected_text = tokenizer.decode(ids, skip_special_tokens=True).strip()
            number, got_text, features, score = (f.strip() for f in lines[2 * i + r].split("|||"))
            assert (int(number), got_text, features) == (i, expected_text, "")
            # float32 scores of different batch shapes: a few ulps of a sum of 8 log-probs.
            assert float(score) == pytest.approx(float(out.sequences_scores[r]), abs=1e-5)


def test_hf_directory_matches_generate(hf_dir: Path, tmp_path: Path):
    _assert_cli_equals_generate(hf_dir, tmp_path, "AutoModelForSeq2SeqLM", 8, 2)


def test_decoder_only_directory_matches_generate(causal_dir: Path, tmp_path: Path):
    """Prompts are left-padded per batch; each continues as it does alone."""
    _assert_cli_equals_generate(causal_dir, tmp_path, "AutoModelForCausalLM", 6, 3)


def test_sorted_and_unsorted_batches_agree(hf_dir: Path, tmp_path: Path):
    src = tmp_path / "src.txt"
    src.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    common = ["translate", "-m", str(hf_dir), "-i", str(src), "--max-new-tokens", "6", "-q"]
    assert run_cli(*common, "--batch-sentences", "2") == run_cli(*common, "--no-sort")


def test_output_file(hf_dir: Path, tmp_path: Path):
    src, dst = tmp_path / "src.txt", tmp_path / "out.txt"
    src.write_text("w1 w2\n", encoding="utf-8")
    assert run_cli("translate", "-m", str(hf_dir), "-i", str(src), "-o", str(dst), "-q") == ""
    assert len(dst.read_text(encoding="utf-8").splitlines()) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nbest", "5", "-k", "2"], "--nbest"),
        (["-m", "/nonexistent/model"], "--model"),
        (["-k", "0"], "--num-beams"),
        (["--batch-sentences", "0"], "--batch-sentences"),
    ],
)
def test_cli_errors(argv: list[str], message: str, tmp_path: Path, capsys):
    src = tmp_path / "src.txt"
    src.write_text("w1\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", "-i", str(src), "-q", *argv], stdout=io.StringIO())
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_invalid_utf8_names_the_line(tmp_path: Path, capsys):
    src = tmp_path / "src.txt"
    src.write_bytes(b"w1\nw2 \xff\n")
    with pytest.raises(SystemExit):
        main(["translate", "-i", str(src), "-q"], stdout=io.StringIO())
    assert "line 2" in capsys.readouterr().err


def test_bundled_model(tmp_path: Path):
    src = tmp_path / "src.txt"
    src.write_text("2 3 3 . 9 7\n7\n", encoding="utf-8")
    lines = run_cli("translate", "-i", str(src), "-k", "4", "-q", "--device", "cpu").splitlines()
    assert lines == ["two hundred thirty three point nine seven", "seven"]
    nbest = run_cli("translate", "-i", str(src), "-k", "4", "--nbest", "4", "-q").splitlines()
    assert len(nbest) == 8 and nbest[0].startswith("0 ||| two hundred thirty three point")


def test_bundled_model_unknown_word(tmp_path: Path, capsys):
    src = tmp_path / "src.txt"
    src.write_text("7\nseven\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["translate", "-i", str(src), "-q"], stdout=io.StringIO())
    err = capsys.readouterr().err
    assert "seven" in err and "line 2" in err


LMBR_SOURCES = ["2 3 3 . 9 7", "7", "1 9 : 3 0", "4 5 %"]


def _bundled_lmbr_reference(nbest: Path, weight: float, eos: bool) -> list[str]:
    """What the Python API gives for the CLI's LMBR settings (defaults p, r, alpha, order)."""
    from tensortext.decode import translate
    from tensortext.lmbr import LMBRBias, lmbr_theta, ngram_posteriors, read_nbest
    from tensortext.models.bundled import load_bundled_translator

    model = load_bundled_translator("cpu")
    word_ids = {word: i for i, word in enumerate(model.target_vocab)}
    evidence = read_nbest(
        nbest,
        num_sentences=len(LMBR_SOURCES),
        tokenize=lambda text: [word_ids[w] for w in text.split()],
    )

    def bias(batch: torch.Tensor, prompt_len: int) -> LMBRBias:
        posteriors = ngram_posteriors(
            evidence.ids[batch], evidence.lengths[batch], evidence.scores[batch],
            eos_id=model.eos_id if eos else None,
        )  # fmt: skip
        return LMBRBias(posteriors, lmbr_theta(0.741, 0.62), vocab_size=model.vocab_size,
                        eos_id=model.eos_id, weight=weight, prompt_len=prompt_len)  # fmt: skip

    src_ids, lengths = model.tokenize_source(LMBR_SOURCES)
    limit = model.max_len - 1
    out = translate(model, src_ids, lengths, num_beams=4, score_bias=bias,
                    max_new_tokens=lambda longest: min(2 * longest + 10, limit))  # fmt: skip
    return model.detokenize(*out.without_eos(0))


@pytest.mark.parametrize("eos", [False, True])
def test_bundled_lmbr_nbest_matches_the_api(tmp_path: Path, eos: bool):
    src, nbest = tmp_path / "src.txt", tmp_path / "evidence.nbest"
    src.write_text("\n".join(LMBR_SOURCES) + "\n", encoding="utf-8")
    # Evidence that disagrees with the model on sentences 0 and 2; sentence 3 has none.
    nbest.write_text(
        "1 ||| seven ||| a=1 ||| -0.1\n"
        "0 ||| two hundred thirty three point nine seven seven ||| ||| -0.5\n"
        "0 ||| two hundred thirty three point nine seven ||| ||| -1.5\n"
        "2 ||| nineteen thirty ||| ||| -0.2\n",
        encoding="utf-8",
    )
    common = ["translate", "-i", str(src), "-k", "4", "-q", "--device", "cpu"]
    plain = run_cli(*common).splitlines()
    flags = ["--lmbr-nbest", str(nbest), "--lmbr-weight", "100"] + (["--lmbr-eos"] if eos else [])
    with_lmbr = run_cli(*common, *flags).splitlines()
    assert with_lmbr == _bundled_lmbr_reference(nbest, 100.0, eos)
    assert with_lmbr != plain  # the evidence changed something, so the comparison is not vacuous
    unsorted = run_cli(*common, *flags, "--no-sort", "--batch-sentences", "1").splitlines()
    assert unsorted == with_lmbr


def test_lmbr_ngram_files_match_nbest_posteriors(tmp_path: Path):
    """SGNMT posterior files holding the posteriors of an n-best list decode like the list."""
    from tensortext.models.bundled import load_bundled_translator

    model = load_bundled_translator("cpu")
    word_ids = {word: i for i, word in enumerate(model.target_vocab)}
    src, nbest = tmp_path / "src.txt", tmp_path / "evidence.nbest"
    src.write_text("\n".join(LMBR_SOURCES) + "\n", encoding="utf-8")
    hypotheses = {0: "two hundred thirty three point nine seven seven", 1: "seventy", 2: "seven",
                  3: "forty five percent"}  # fmt: skip
    nbest.write_text("".join(f"{i} ||| {h} ||| ||| 0\n" for i, h in hypotheses.items()), "utf-8")
    for i, hyp in hypotheses.items():  # one hypothesis per sentence: every n-gram has P = 1
        ids = [word_ids[w] for w in hyp.split()]
        grams = {tuple(ids[k : k + n]) for n in range(1, 5) for k in range(len(ids) - n + 1)}
        lines = "".join(f"{' '.join(map(str, g))} : 1.0\n" for g in sorted(grams))
        (tmp_path / f"post.{i + 1}").write_text(lines, encoding="utf-8")
    common = ["translate", "-i", str(src), "-q", "--device", "cpu", "--lmbr-weight", "100"]
    from_files = run_cli(*common, "--lmbr-ngrams", str(tmp_path / "post.%d"))
    assert from_files == run_cli(*common, "--lmbr-nbest", str(nbest))
    assert from_files != run_cli("translate", "-i", str(src), "-q", "--device", "cpu")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--lmbr-nbest", "{nbest}", "--lmbr-ngrams", "x.%d"], "not both"),
        (["--lmbr-bos", "1"], "--lmbr-bos"),
        (["--lmbr-nbest", "{bad_nbest}"], "bad.nbest:2"),
        (["--lmbr-nbest", "{nbest}", "--lmbr-p", "0"], "p must be"),
        (["--lmbr-ngrams", "{tmp}/post.%d", "--lmbr-order", "1"], "--lmbr-order"),
    ],
)
def test_lmbr_cli_errors(extra: list[str], message: str, tmp_path: Path, capsys):
    src = tmp_path / "src.txt"
    src.write_text("7\n", encoding="utf-8")
    (tmp_path / "ok.nbest").write_text("0 ||| seven ||| ||| 0\n", encoding="utf-8")
    (tmp_path / "bad.nbest").write_text(
        "0 ||| seven ||| ||| 0\n0 ||| sevenish ||| ||| 0\n", "utf-8"
    )
    (tmp_path / "post.1").write_text("3 4 : 0.5\n", encoding="utf-8")
    names = {"nbest": tmp_path / "ok.nbest", "bad_nbest": tmp_path / "bad.nbest", "tmp": tmp_path}
    argv = [arg.format(**names) for arg in extra]
    with pytest.raises(SystemExit) as exit_info:
        main(["translate", "-i", str(src), "-q", "--device", "cpu", *argv], stdout=io.StringIO())
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_hf_directory_with_lmbr_matches_generate(hf_dir: Path, tmp_path: Path):
    """LMBR through the CLI equals ``model.generate`` with the same bias as a logits processor
    (HF's beam search applies processors to the log-probs, after its own, as we add the bias)."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, LogitsProcessorList

    from tensortext.lmbr import LMBRBias, lmbr_theta, ngram_posteriors

    src, nbest = tmp_path / "src.txt", tmp_path / "evidence.nbest"
    src.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    evidence = {0: "w5 w6 w7", 2: "w1 w1 w2", 3: "w9"}
    nbest.write_text("".join(f"{i} ||| {t} ||| ||| -0.5\n" for i, t in evidence.items()), "utf-8")
    common = ["translate", "-m", str(hf_dir), "-i", str(src), "-k", "3", "--max-new-tokens", "8",
              "--batch-sentences", "2", "--device", "cpu", "-q"]  # fmt: skip
    lines = run_cli(*common, "--lmbr-nbest", str(nbest), "--lmbr-weight", "30").splitlines()

    model = AutoModelForSeq2SeqLM.from_pretrained(hf_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(hf_dir)
    expected = []
    for i, source in enumerate(SOURCES):
        hyp = [tokenizer.convert_tokens_to_ids(w) for w in evidence.get(i, "").split()]
        ids = torch.tensor([[hyp or [0]]])
        posteriors = ngram_posteriors(ids, torch.tensor([[len(hyp)]]),
                                      torch.tensor([[-0.5 if hyp else -math.inf]]))  # fmt: skip
        bias = LMBRBias(posteriors, lmbr_theta(0.741, 0.62), vocab_size=43, eos_id=0, weight=30)
        encoded = tokenizer([source], return_tensors="pt")
        processor = LogitsProcessorList([_BiasProcessor(bias)])
        out = model.generate(**encoded, num_beams=3, max_new_tokens=8, do_sample=False,
                             logits_processor=processor)  # fmt: skip
        expected.append(tokenizer.decode(out[0], skip_special_tokens=True).strip())
    assert lines == expected
    assert lines != run_cli(*common).splitlines()


class _BiasProcessor:
    """A score bias as a ``transformers`` logits processor: ``scores + bias(input_ids)``."""

    def __init__(self, bias: Any) -> None:
        self.bias = bias

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        return scores + self.bias(input_ids)


@pytest.mark.parametrize("order", ["100000000000", "2000000", "0"])
def test_lmbr_order_is_bounded_before_any_work(tmp_path: Path, order: str):
    """``--lmbr-order 1e11`` was a MemoryError traceback, 2e6 a 10 MB "one-line" error. The real
    console command refuses it in one line, exit 2, before reading a file; -o is untouched."""
    import subprocess
    import sys

    (tmp_path / "src.txt").write_text("7\n", encoding="utf-8")
    (tmp_path / "ev.nbest").write_text("0 ||| seven ||| ||| 0\n", encoding="utf-8")
    (tmp_path / "out.txt").write_bytes(b"the user's old output\n")
    done = subprocess.run(
        [sys.executable, "-m", "tensortext.cli", "translate", "-i", "src.txt", "-o", "out.txt",
         "--lmbr-nbest", "ev.nbest", "--lmbr-order", order, "--device", "cpu", "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert f"--lmbr-order must be between 1 and 1000, got {order}" in done.stderr
    assert (tmp_path / "out.txt").read_bytes() == b"the user's old output\n"
