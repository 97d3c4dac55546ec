"""Fixtures: a real SQLite file and a real PostgreSQL schema holding a small shop.

PostgreSQL is the server of ``bash scripts/services/pgvector.sh start`` (shared with
store-pgvector); ``RAGLOOM_PG_DSN`` points the tests at another one. When it does not
answer, the PostgreSQL tests fail with that command; nothing is skipped. Each session
gets its own schema and a non-superuser role holding every privilege on it, so a
refused write is refused by the read-only transaction, not by a missing grant.
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

from ragloom.testkit.servers import service_setting

START_HINT = "bash scripts/services/pgvector.sh start"

SHOP_DDL = [
    "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT)",
    "CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL"
    " REFERENCES customers(id), product TEXT NOT NULL, amount NUMERIC(8, 2))",
]
CUSTOMERS = [(1, "Ada", "London"), (2, "Linus", "Helsinki"), (3, "Grace", "New York")]
ORDERS = [(1, 1, "lamp", 25.5), (2, 1, "desk", 120.0), (3, 2, "chair", 60.0), (4, 3, "lamp", 25.5)]


def pg_admin_dsn() -> str:
    return service_setting("RAGLOOM_PG_DSN")


def with_user(dsn: str, user: str) -> str:
    """``dsn`` with its user replaced (trust authentication on the test server)."""
    return re.sub(r"^(postgresql://)[^@/]*@", rf"\1{user}@", dsn)


def sqlalchemy_url(dsn: str) -> str:
    return dsn.replace("postgresql://", "postgresql+psycopg://", 1)


@pytest.fixture(scope="session")
def pg_admin() -> str:
    """The superuser DSN; fails (never skips) with the command that starts the server."""
    target = pg_admin_dsn()
    try:
        with psycopg.connect(target, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(
            f"PostgreSQL is not reachable at {target}: {str(exc).strip().splitlines()[0]}\n"
            f"Start it with `{START_HINT}` (from the repository root), "
            "or set RAGLOOM_PG_DSN to a PostgreSQL server.",
            pytrace=False,
        )
    return target


@pytest.fixture(scope="session")
def pg_shop(pg_admin: str) -> Iterator[tuple[str, str]]:
    """``(reader DSN, schema)``: a fresh schema with the shop and a role owning all of it."""
    tag = uuid.uuid4().hex[:10]
    schema, role = f"sqlret_{tag}", f"sqlret_reader_{tag}"
    ident_s, ident_r = sql.Identifier(schema), sql.Identifier(role)
    with psycopg.connect(pg_admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER").format(ident_r))
        conn.execute(sql.SQL("CREATE SCHEMA {} AUTHORIZATION {}").format(ident_s, ident_r))
        conn.execute(sql.SQL("SET search_path = {}").format(ident_s))
        for ddl in SHOP_DDL:
            conn.execute(ddl)
        conn.execute("CREATE SEQUENCE order_ids")
        conn.cursor().executemany("INSERT INTO customers VALUES (%s, %s, %s)", CUSTOMERS)
        conn.cursor().executemany("INSERT INTO orders VALUES (%s, %s, %s, %s)", ORDERS)
        conn.execute("CREATE TABLE documents (topic TEXT PRIMARY KEY, body TEXT NOT NULL)")
        # A function that writes, running with its owner's (the superuser's) rights.
        conn.execute(
            sql.SQL(
                "CREATE FUNCTION add_customer(n text) RETURNS integer LANGUAGE sql "
                "SECURITY DEFINER SET search_path = {} AS "
                "'INSERT INTO customers VALUES (99, n, NULL) RETURNING id'"
            ).format(ident_s)
        )
        for kind in ("TABLES", "SEQUENCES"):
            conn.execute(
                sql.SQL("GRANT ALL ON ALL " + kind + " IN SCHEMA {} TO {}").format(ident_s, ident_r)
            )
    yield with_user(pg_admin, role), schema
    with psycopg.connect(pg_admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(ident_s))
        conn.execute(sql.SQL("DROP ROLE {}").format(ident_r))


@pytest.fixture
def pg_engine(pg_shop: tuple[str, str]) -> Iterator[sa.Engine]:
    engine = sa.create_engine(sqlalchemy_url(pg_shop[0]))
    yield engine
    engine.dispose()


def pg_snapshot(pg_admin: str, schema: str) -> tuple[object, ...]:
    """The shop's content, read as the superuser (to prove it unchanged)."""
    with psycopg.connect(pg_admin) as conn:
        conn.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
        customers = conn.execute("SELECT * FROM customers ORDER BY id").fetchall()
        orders = conn.execute("SELECT * FROM orders ORDER BY id").fetchall()
        seq = conn.execute("SELECT last_value, is_called FROM order_ids").fetchone()
    return tuple(customers), tuple(orders), seq


@pytest.fixture
def sqlite_path(tmp_path: Path) -> Path:
    """A SQLite file with the shop."""
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as conn:
        for ddl in SHOP_DDL:
            conn.execute(ddl)
        conn.executemany("INSERT INTO customers VALUES (?, ?, ?)", CUSTOMERS)
        conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", ORDERS)
    conn.close()
    return path


def sqlite_snapshot(path: Path) -> tuple[object, ...]:
    conn = sqlite3.connect(path)
    try:
        tables = conn.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
        customers = conn.execute("SELECT * FROM customers ORDER BY id").fetchall()
        orders = conn.execute("SELECT * FROM orders ORDER BY id").fetchall()
    finally:
        conn.close()
    return tuple(tables), tuple(customers), tuple(orders)


@pytest.fixture
def pg_data(pg_admin: str, pg_shop: tuple[str, str]) -> Callable[[], tuple[object, ...]]:
    """A function returning the PostgreSQL shop's current content."""
    return lambda: pg_snapshot(pg_admin, pg_shop[1])


@pytest.fixture
def sqlite_data(sqlite_path: Path) -> Callable[[], tuple[object, ...]]:
    """A function returning the SQLite shop's current content (and table list)."""
    return lambda: sqlite_snapshot(sqlite_path)
