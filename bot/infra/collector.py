"""Python's garbage collector, set for a long-running worker once it has started.

A worker holds many long-lived objects (the modules, settings and the core built at start-up,
then each thread's session and presenter while it is answered), and the collector's default
thresholds (700, 10, 10) make it walk them again and again: measured with ``bench/engine.py
--gc``, about a fifth of a busy worker's CPU. Two things make that work smaller:

* :func:`gc.freeze` after start-up moves everything alive then into a generation the collector
  never walks again (it stays alive anyway);
* a higher threshold for the young generation (:data:`THRESHOLDS`) makes collections rarer, so
  short-lived objects (a streamed chunk, a request's pieces) are mostly freed by their reference
  counts before a collection ever looks at them; reference cycles are still collected, later.
"""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 20, 20)
"""Allocations (less deallocations) between young collections; young collections between
middle ones; middle ones between full ones (CPython's own rule still defers a full collection
until a quarter of the objects are new)."""


def settle() -> None:
    """Call once start-up is done: collect what start-up left over, freeze what remains, and
    set :data:`THRESHOLDS`."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
