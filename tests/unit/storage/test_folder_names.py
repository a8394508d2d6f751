"""A delimited listing's common prefixes as a lazy root's folder names."""

from __future__ import annotations

from flask_predict.storage.store import folder_names


def test_the_prefix_and_the_slash_go_and_the_empty_name_is_left_out() -> None:
    assert folder_names(["root/m2/", "root/m1/", "root//"], "root/") == ["m1", "m2"]


def test_a_bucket_root_keeps_every_name() -> None:
    assert folder_names(["b/", "a/", "a/"], "") == ["a", "b"]
