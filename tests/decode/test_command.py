"""``tensortext translate`` with a Hugging Face model directory and with the bundled model."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import MarianConfig, MarianMTModel, PreTrainedTokenizerFast

from tensortext.cli import main
from tensortext.decode.hf import generate

WORDS = [f"w{i}" for i in range(40)]


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Marian model with a word-level tokenizer, saved like a hub checkpoint."""
    vocab = {"</s>": 0, "<unk>": 1, **{w: i + 2 for i, w in enumerate(WORDS)}, "<pad>": 42}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<pad>", eos_token="</s>"
    )
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


def run_cli(*argv: str) -> str:
    out = io.StringIO()
    assert main(list(argv), stdout=out) == 0
    return out.getvalue()


SOURCES = ["w1 w2 w3", "w4", "w5 w6 w7 w8 w9", "w10 w11", "w12 w13 w14 w15"]


def test_hf_directory_matches_generate(hf_dir: Path, tmp_path: Path):
    src = tmp_path / "src.txt"
    src.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    text = run_cli(
        "translate", "-m", str(hf_dir), "-i", str(src), "-k", "3", "--max-new-tokens", "8",
        "--nbest", "2", "--batch-sentences", "2", "--device", "cpu", "-q",
    )  # fmt: skip
    lines = text.splitlines()
    assert len(lines) == 2 * len(SOURCES)

    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(hf_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(hf_dir)
    for i, source in enumerate(SOURCES):
        encoded = tokenizer([source], return_tensors="pt")
        out = generate(model, encoded["input_ids"], encoded["attention_mask"], num_beams=3,
                       max_new_tokens=8, num_return_sequences=2)  # fmt: skip
        for r in range(2):
            ids = out.sequences[0, r, : out.lengths[0, r]]
            expected_text = tokenizer.decode(ids, skip_special_tokens=True).strip()
            number, got_text, features, score = (f.strip() for f in lines[2 * i + r].split("|||"))
            assert (int(number), got_text, features) == (i, expected_text, "")
            assert float(score) == pytest.approx(float(out.scores[0, r]), abs=1e-5)


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
