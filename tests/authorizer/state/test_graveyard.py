"""The graveyard frees buried object graphs in steps once nobody else holds them, and never touches shared parts."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Callable

import msgspec
import pytest

from kraftacl.authorizer.state import graveyard as graveyard_module
from kraftacl.authorizer.state.graveyard import Graveyard


class Node:
    """A small object a weak reference can watch."""

    def __init__(self, payload: object) -> None:
        self.payload = payload


def wait_for(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the graveyard did not get there in time"
        time.sleep(0.005)


def test_a_buried_graph_nobody_else_holds_is_taken_apart_and_freed() -> None:
    yard = Graveyard("test-graveyard")
    nodes = [Node({"k": [i, str(i)]}) for i in range(10_000)]
    big = {f"name-{i}": nodes[i] for i in range(10_000)}  # a dict past SLICE: emptied a slice at a time
    watch = [weakref.ref(nodes[0]), weakref.ref(nodes[-1])]
    graph = [big, set(range(5000)), (1, 2, [3])]
    del nodes, big
    gc.disable()  # nothing is freed by the collector: only by the graveyard
    try:
        yard.bury(graph)
        del graph
        wait_for(lambda: all(w() is None for w in watch))
        assert yard.freed > 10_000
    finally:
        gc.enable()


class Body(msgspec.Struct, gc=False):
    """A decoded request body as serve's are: the collector does not see a gc=False Struct's fields."""

    items: list[Node]


def test_a_gc_free_struct_is_entered_through_its_fields_not_freed_whole() -> None:
    yard = Graveyard("test-graveyard")
    nodes = [Node([i]) for i in range(10_000)]
    watch = weakref.ref(nodes[-1])
    body = Body(nodes)
    assert gc.get_referents(body) == []  # what the graveyard cannot rely on for such a Struct
    del nodes
    yard.bury(body)
    del body
    wait_for(lambda: yard.freed > 0)  # counted when the whole graph is done
    assert watch() is None
    assert yard.freed > 10_000  # the list and each node were let go one at a time, not with the Struct in one free


def test_a_part_still_held_elsewhere_is_let_go_of_untouched() -> None:
    yard = Graveyard("test-graveyard")
    shared = {i: [i] for i in range(5000)}  # a big dict the graph shares with this test
    shared_list = list(range(5000))
    private = Node("private")
    watch = weakref.ref(private)
    graph = [shared, shared_list, private]
    del private
    yard.bury(graph)
    del graph
    wait_for(lambda: watch() is None)
    assert shared == {i: [i] for i in range(5000)}
    assert shared_list == list(range(5000))


def test_a_graph_is_taken_apart_only_once_its_last_other_holder_lets_go() -> None:
    yard = Graveyard("test-graveyard")
    inner = Node("kept while held")
    watch = weakref.ref(inner)
    graph = [inner, {"x": inner}]
    del inner
    yard.bury(graph)
    time.sleep(0.2)  # several polls while `graph` is still held here
    assert watch() is not None
    assert graph[1] == {"x": graph[0]}  # untouched while held
    del graph
    wait_for(lambda: watch() is None)


def test_a_graph_held_past_the_patience_is_let_go_and_freed_by_its_last_holder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(graveyard_module, "PATIENCE_S", 0.05)
    yard = Graveyard("test-graveyard")
    graph = [Node("held")]
    yard.bury(graph)
    wait_for(lambda: yard.let_go == 1)
    assert graph[0].payload == "held"
    watch = weakref.ref(graph[0])
    del graph
    assert watch() is None  # freed the usual way, by its last holder


def test_leaves_and_none_are_not_buried() -> None:
    yard = Graveyard("test-graveyard")
    yard.bury(None, "text", 3, b"bytes")
    time.sleep(0.05)
    assert yard.freed == 0
