"""Selectors read (shared/STYLE.md): evaluation.selectors holds no process cache and writes
no row; the two stores it used to hold are modules of their own with a get_or_build."""

import ast
import inspect
import threading

from evaluation import pooled_labels, scoring_inputs, selectors

WRITES = {"bulk_create", "create", "update", "delete", "save", "get_or_create", "update_or_create"}


def test_the_evaluation_selectors_hold_no_lock_and_no_cache():
    lock = type(threading.Lock())
    held = [name for name, value in vars(selectors).items() if isinstance(value, lock) or (name.isupper() and isinstance(value, dict))]
    assert held == []


def test_the_evaluation_selectors_write_nothing():
    tree = ast.parse(inspect.getsource(selectors))
    called = {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    assert called & WRITES == set()


def test_each_store_has_a_get_or_build_and_says_when_it_is_rebuilt():
    for store in (scoring_inputs, pooled_labels):
        assert callable(store.get_or_build) and callable(store.forget)
        assert "When it is rebuilt" in store.__doc__
