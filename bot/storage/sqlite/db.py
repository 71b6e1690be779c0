"""What the SQLite store's table mixins need of it: the connection and write transactions."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

import aiosqlite


class Db(Protocol):
    @property
    def db(self) -> aiosqlite.Connection: ...

    def transaction(self) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...
