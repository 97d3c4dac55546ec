"""gc_paused: pause the cyclic garbage collector while objects are built in bulk."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the cyclic GC inside the block and re-enable it after, even on error, if
    it was enabled before (left alone otherwise).

    For code that builds many objects forming no cycles (segments, decoded rows): each
    collection the allocations trigger walks every live container, so building N objects
    next to a large heap costs O(N x heap) instead of O(N). Reference counting still frees
    everything; only cycle detection waits. The switch is process-wide: a thread building
    objects meanwhile is not collected either, for as long as the block runs.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
