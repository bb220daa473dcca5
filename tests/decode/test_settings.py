"""``BeamSettings``: the beam settings declared and validated once; the public keyword
functions repeat its defaults, and this test keeps them from drifting apart."""

from __future__ import annotations

import dataclasses
import inspect
import math

import pytest

from tensortext.decode import beam_search, translate
from tensortext.decode.hf import beam_search_hf
from tensortext.decode.settings import BeamSettings

FIELDS = {field.name: field for field in dataclasses.fields(BeamSettings)}
# beam_search_hf takes these as HF does: None means "the model's generation_config".
HF_FROM_CONFIG = {"min_new_tokens", "length_penalty", "early_stopping"}


@pytest.mark.parametrize("function", [beam_search, translate, beam_search_hf])
def test_public_defaults_equal_the_settings_defaults(function):
    """Every setting a public function takes has BeamSettings' default (or none, where the
    setting is required there), so the two cannot drift apart."""
    parameters = inspect.signature(function).parameters
    shared = [name for name in FIELDS if name in parameters]
    assert len(shared) >= 7, shared  # the function does take the settings
    for name in shared:
        default = parameters[name].default
        field_default = FIELDS[name].default
        if function is beam_search_hf and name in HF_FROM_CONFIG:
            assert default is None, name
        elif default is inspect.Parameter.empty or field_default is dataclasses.MISSING:
            # Required in the settings: a function may require it too, or give its own
            # default (translate's num_beams=4, its max_new_tokens a function of the source).
            assert field_default is dataclasses.MISSING, name
        else:
            assert default == field_default and type(default) is type(field_default), name


@pytest.mark.parametrize(
    ("override", "error", "match"),
    [
        ({"num_beams": 0}, ValueError, "num_beams must be >= 1"),
        ({"num_beams": 2.0}, TypeError, "num_beams must be an int"),
        ({"max_new_tokens": 2**63}, ValueError, "max_new_tokens must be <= 2"),
        ({"min_new_tokens": 9}, ValueError, "min_new_tokens .9. exceeds max_new_tokens"),
        ({"num_return_sequences": 5}, ValueError, "must be <= num_beams"),
        ({"finished": "drop"}, ValueError, "finished must be one of"),
        ({"length_penalty": math.nan}, ValueError, "length_penalty must be finite"),
        ({"early_stopping": "sometimes"}, ValueError, "early_stopping must be True"),
        ({"prune_threshold": 1.5}, ValueError, "prune_threshold must be in"),
    ],
)
def test_settings_are_validated_when_built(override, error, match):
    with pytest.raises(error, match=match):
        BeamSettings(**{"num_beams": 4, "max_new_tokens": 8, **override})


def test_settings_are_frozen_and_replace_revalidates():
    settings = BeamSettings(num_beams=4, max_new_tokens=8, length_penalty=2)
    assert settings.length_penalty == 2.0 and isinstance(settings.length_penalty, float)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.num_beams = 2  # type: ignore[misc]
    with pytest.raises(ValueError, match="num_beams must be >= 1"):
        dataclasses.replace(settings, num_beams=0)
