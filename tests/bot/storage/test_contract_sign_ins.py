"""The store contract for MCP sign-ins (sealed blobs written by compare-and-set), and the vault
over it as two workers sharing one store use it. Run on every implementation."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from bot.infra.sealed import Sealer, key_from, sealer
from bot.mcp.tokens import FOLDER, Kept, Vault, file_folder
from bot.storage.protocol import Store
from tests.bot.storage.conftest import Stores

KEY = "one key every worker is given"
SECRET = "at-7f3c9e-never-shown"


def tokens(access: str, expires_in: float, refresh: str = "rt") -> dict[str, object]:
    return {
        "tokens": {"access_token": access, "token_type": "Bearer", "refresh_token": refresh},
        "expires_at": time.time() + expires_in,
        "refreshable": True,
    }


async def test_a_sign_in_is_kept_by_compare_and_set(stores: Stores, store: Store) -> None:
    assert await store.sign_in("docs", "shared") is None
    assert await store.keep_sign_in("docs", "shared", b"one", 0, 1.0)
    assert not await store.keep_sign_in("docs", "shared", b"two", 0, 2.0)  # kept already
    assert await store.sign_in("docs", "shared") == Kept(b"one", 1)
    assert await store.keep_sign_in("docs", "shared", b"two", 1, 3.0)
    assert not await store.keep_sign_in("docs", "shared", b"stale", 1, 4.0)  # another came first
    assert await store.keep_sign_in("docs", "person:U1", b"mine", 0, 5.0)
    assert await store.keep_sign_in("wiki", "shared", b"other", 0, 5.0)
    store = await stores.reopen(store)

    assert await store.sign_in("docs", "shared") == Kept(b"two", 2)
    assert await store.sign_ins("docs") == [("person:U1", b"mine"), ("shared", b"two")]
    await store.forget_sign_in("docs", "shared")
    await store.forget_sign_in("docs", "shared")  # forgetting twice is fine
    assert await store.sign_in("docs", "shared") is None
    assert await store.sign_ins("docs") == [("person:U1", b"mine")]
    assert await store.sign_ins("wiki") == [("shared", b"other")]


async def test_signed_in_on_one_worker_used_by_the_other(
    stores: Stores, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    worker_a = Vault(store, Sealer(key_from(KEY)))
    worker_b = Vault(await stores.open(), Sealer(key_from(KEY)))

    await worker_a.slot("docs").write(tokens(SECRET, 3600))
    await worker_a.slot("docs", "U1").write(tokens("person-token", 3600))

    found = await worker_b.slot("docs").read()
    assert found is not None and found["tokens"]["access_token"] == SECRET
    assert [p for p, _ in await worker_b.people("docs")] == ["U1"]
    sealed = await store.sign_in("docs", "shared")
    assert sealed is not None and SECRET.encode() not in sealed.sealed  # sealed at rest

    await worker_b.slot("docs").erase()  # `threadline mcp logout docs` on B's host
    assert await worker_a.slot("docs").read() is None
    assert SECRET not in caplog.text


async def test_a_renewal_never_overwrites_a_newer_token(stores: Stores, store: Store) -> None:
    worker_a = Vault(store, Sealer(key_from(KEY))).slot("docs")
    worker_b = Vault(await stores.open(), Sealer(key_from(KEY))).slot("docs")
    await worker_a.write({**tokens("first", -5), "client": {"client_id": "c1"}})

    seen_by_b = await worker_b.read()  # B reads, then A renews meanwhile
    assert seen_by_b is not None
    await worker_a.write({**(await worker_a.read() or {}), **tokens("renewed-by-a", 3600)})

    # B writes what it read with older tokens (its metadata changed): A's tokens stay
    await worker_b.write({**seen_by_b, "authorization_server": {"issuer": "https://as"}})
    kept = await worker_a.read()
    assert kept is not None
    assert kept["tokens"]["access_token"] == "renewed-by-a"
    assert kept["authorization_server"] == {"issuer": "https://as"}
    assert kept["client"] == {"client_id": "c1"}

    # a renewal on B that is fresher than what A kept wins (last writer, newest token)
    await worker_b.write({**seen_by_b, **tokens("renewed-by-b", 7200)})
    kept = await worker_a.read()
    assert kept is not None and kept["tokens"]["access_token"] == "renewed-by-b"


async def test_a_worker_with_another_key_reads_no_sign_in(stores: Stores, store: Store) -> None:
    await Vault(store, Sealer(key_from(KEY))).slot("docs").write(tokens(SECRET, 3600))
    other = Vault(await stores.open(), Sealer(key_from("a per-host key")))
    assert await other.slot("docs").read() is None
    assert await other.people("docs") == []


async def test_sign_ins_kept_in_files_are_moved_into_the_store_once(
    store: Store, tmp_path: Path
) -> None:
    data = tmp_path / "worker"
    seal = sealer(data, None)  # the per-host key file, as before
    folder = data / FOLDER / file_folder("docs")
    folder.mkdir(parents=True)
    (folder / "a.sealed").write_bytes(
        seal.seal(b'{"subject": "shared", "tokens": {"access_token": "old"}}')
    )
    (folder / "b.sealed").write_bytes(
        seal.seal(b'{"subject": "person:U1", "tokens": {"access_token": "theirs"}}')
    )
    vault = Vault(store, seal)

    assert await vault.adopt_files(data, ["docs", "wiki"]) == 2
    assert not list(folder.glob("*.sealed"))
    assert await vault.adopt_files(data, ["docs"]) == 0
    shared = await vault.slot("docs").read()
    assert shared is not None and shared["tokens"]["access_token"] == "old"
    assert [p for p, _ in await vault.people("docs")] == ["U1"]


async def test_a_worker_with_another_key_never_overwrites_the_sign_in(
    stores: Stores, store: Store
) -> None:
    await Vault(store, Sealer(key_from(KEY))).slot("docs").write(tokens(SECRET, 3600))
    stray = Vault(await stores.open(), Sealer(key_from("a per-host key"))).slot("docs")
    assert await stray.read() is None
    await stray.write({"client": {"client_id": "registered-by-the-stray"}})
    kept = await Vault(store, Sealer(key_from(KEY))).slot("docs").read()
    assert kept is not None and kept["tokens"]["access_token"] == SECRET
