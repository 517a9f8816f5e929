import pytest
from pydantic import ValidationError

from memory_retrievers import ConfigError, DedupPolicy, MemoryKind, StoreConfig
from memory_retrievers.config import validated


def test_defaults_are_the_documented_values() -> None:
    cfg = StoreConfig()
    assert cfg.near_duplicate_threshold == 0.95
    assert cfg.dedup_policy is DedupPolicy.SKIP
    assert cfg.dedup_exempt_kinds == frozenset({MemoryKind.MESSAGE})
    assert cfg.ann_index_min_rows == 100_000


def test_config_is_frozen() -> None:
    cfg = StoreConfig()
    with pytest.raises(ValidationError):
        cfg.context_window = 3  # type: ignore[misc]


def test_unknown_key_lists_valid_keys() -> None:
    with pytest.raises(ConfigError, match=r"unknown key 'near_dup_threshold'.*near_duplicate_threshold"):
        validated(StoreConfig, {"near_dup_threshold": 0.9}, "StoreConfig")


@pytest.mark.parametrize(
    "bad",
    [
        {"near_duplicate_threshold": 1.5},
        {"near_duplicate_threshold": 0},
        {"context_window": -1},
        {"dedup_policy": "merge"},
        {"write_batch_size": 0},
        {"index_cache_bytes": -1},
    ],
)
def test_out_of_range_values_raise_config_error(bad: dict) -> None:
    with pytest.raises(ConfigError, match="invalid StoreConfig"):
        validated(StoreConfig, bad, "StoreConfig")


def test_non_mapping_config_is_rejected() -> None:
    with pytest.raises(ConfigError, match="must be a StoreConfig or a dict"):
        validated(StoreConfig, ["context_window", 2], "StoreConfig")


def test_enum_values_accepted_as_strings() -> None:
    cfg = validated(StoreConfig, {"dedup_policy": "update", "dedup_exempt_kinds": ["message", "raw"]}, "StoreConfig")
    assert cfg.dedup_policy is DedupPolicy.UPDATE
    assert cfg.dedup_exempt_kinds == frozenset({MemoryKind.MESSAGE, MemoryKind.RAW})
