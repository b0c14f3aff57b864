"""lib.ids.id_problem on the printable ASCII ids of nearly every import: its short way
through them gives the answers of its full checks."""

import pytest

from lib.ids import id_problem


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("CR93E-3103#37", None),
        ("q/ü:2", None),
        ("~" * 255, None),
        ("a" * 256, "_id 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'... is longer than 255 characters"),
        ("", "_id is empty"),
        ("has space", "_id 'has space' contains whitespace, which TREC files cannot carry"),
        ("tab\there", "_id 'tab\\there' contains whitespace, which TREC files cannot carry"),
        ("del\x7f", "_id 'del\\x7f' contains a control character (U+007F) at character 4"),
        (7, "_id must be a string, got int 7"),
    ],
)
def test_printable_ascii_ids_pass_and_every_other_answer_is_unchanged(value, problem):
    assert id_problem(value, "_id") == problem
