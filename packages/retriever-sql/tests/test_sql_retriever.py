"""The text-to-SQL loop on real SQLite and PostgreSQL, with a scripted chat model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlalchemy as sa

from ragloom.core.errors import InvalidArgumentError, PromptTemplateError
from ragloom.core.query import Query
from ragloom.retrievers.sql import (
    SqlDatabaseContentRetriever,
    SqlExecutionError,
    UnsafeSqlError,
)
from ragloom.testkit import ScriptedChatModel

NO_DRIVER = SimpleNamespace(paramstyle="format")  # the dialect check needs no driver installed
GOOD = "SELECT c.name, SUM(o.amount) AS total FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.name ORDER BY total DESC"  # noqa: E501


def sqlite_retriever(
    path: Path, model: ScriptedChatModel, **options: object
) -> SqlDatabaseContentRetriever:
    return SqlDatabaseContentRetriever(f"sqlite:///{path}", model, **options)  # type: ignore[arg-type]


def test_prompt_carries_schema_dialect_question_and_samples(sqlite_path: Path) -> None:
    model = ScriptedChatModel([f"```sql\n{GOOD};\n```"])
    retriever = sqlite_retriever(sqlite_path, model, sample_rows=2)
    [content] = retriever.retrieve(Query("Who spent the most?"))
    system, user = model.requests[0].messages
    assert "sqlite database" in system.text
    assert "TABLE orders (" in system.text
    assert "customer_id INTEGER NOT NULL" in system.text
    assert "FOREIGN KEY (customer_id) REFERENCES customers(id)" in system.text
    assert "id INTEGER PRIMARY KEY" in system.text
    assert "-- 2 sample rows of customers:" in system.text
    assert "-- 1 | Ada | London" in system.text
    assert "Grace" not in system.text  # only 2 sample rows
    assert user.text == "Question: Who spent the most?"
    assert content.text.splitlines() == [
        "name | total",
        "Ada | 145.5",
        "Linus | 60",
        "Grace | 25.5",
    ]
    assert content.metadata["sql"] == GOOD
    assert content.metadata["row_count"] == 3
    assert content.metadata["truncated"] is False


def test_sample_rows_zero_and_include_tables(sqlite_path: Path) -> None:
    model = ScriptedChatModel(["SELECT name FROM customers"])
    retriever = sqlite_retriever(sqlite_path, model, sample_rows=0, include_tables=["customers"])
    retriever.retrieve(Query("names"))
    system = model.requests[0].messages[0].text
    assert "TABLE customers" in system
    assert "TABLE orders" not in system
    assert "sample" not in system
    with pytest.raises(InvalidArgumentError, match=r"include_tables .*\['nope'\]"):
        _ = sqlite_retriever(sqlite_path, model, include_tables=["nope"]).schema_text


def test_syntax_error_is_fed_back_then_fixed(sqlite_path: Path) -> None:
    model = ScriptedChatModel(
        [
            "SELEC name FROM customers",
            "SELECT nam FROM customers",
            "Sure:\n```\nSELECT name FROM customers ORDER BY id\n```",
        ]
    )
    retriever = sqlite_retriever(sqlite_path, model, max_retries=2)
    [content] = retriever.retrieve(Query("customer names"))
    assert content.text.splitlines() == ["name", "Ada", "Linus", "Grace"]
    assert "does not parse" in model.prompts[1]
    assert "no such column: nam" in model.prompts[2]
    assert [m.role for m in model.requests[2].messages][-2:] == ["assistant", "user"]


def test_retries_are_bounded(sqlite_path: Path) -> None:
    model = ScriptedChatModel(["SELECT x FROM nowhere"] * 2)
    retriever = sqlite_retriever(sqlite_path, model, max_retries=1)
    with pytest.raises(SqlExecutionError, match="after 2 attempts.*no such table: nowhere"):
        retriever.retrieve(Query("?"))
    assert model.remaining == 0


def test_row_limit_and_empty_result(sqlite_path: Path) -> None:
    model = ScriptedChatModel(
        ["SELECT id FROM orders ORDER BY id", "SELECT id FROM orders WHERE 0"]
    )
    retriever = sqlite_retriever(sqlite_path, model, max_rows=2)
    [content] = retriever.retrieve(Query("ids"))
    assert content.text.splitlines() == ["id", "1", "2", "(only the first 2 rows)"]
    assert content.metadata["truncated"] is True
    assert retriever.retrieve(Query("none")) == []


def test_content_per_row_keeps_columns_as_metadata(sqlite_path: Path) -> None:
    model = ScriptedChatModel(["SELECT id, name, city FROM customers WHERE id < 3 ORDER BY id"])
    contents = sqlite_retriever(sqlite_path, model, content_per_row=True).retrieve(Query("q"))
    assert [c.text for c in contents] == [
        "id: 1\nname: Ada\ncity: London",
        "id: 2\nname: Linus\ncity: Helsinki",
    ]
    assert contents[1].text_segment.metadata.to_dict() == {
        "id": 2,
        "name": "Linus",
        "city": "Helsinki",
    }


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("DROP TABLE orders", "got DROP"),
        ("DELETE FROM orders", "got DELETE"),
        ("UPDATE orders SET amount = 0", "got UPDATE"),
        ("INSERT INTO customers VALUES (9, 'x', NULL)", "got INSERT"),
        ("SELECT 1; DELETE FROM orders", "exactly one SQL statement is allowed, got 2"),
        (
            "WITH gone AS (DELETE FROM orders RETURNING *) SELECT * FROM gone",
            "DELETE is not allowed",
        ),
        ("SELECT * INTO stolen FROM orders", r"SELECT \.\.\. INTO is not allowed"),
        ("SELECT * FROM orders FOR UPDATE", "FOR UPDATE/SHARE is not allowed"),
        ("PRAGMA query_only = OFF", "got PRAGMA"),
        ("ATTACH DATABASE '/tmp/x.db' AS x", "got ATTACH"),
    ],
)
def test_hostile_sql_is_refused_before_execution_sqlite(
    sqlite_path: Path, sqlite_data: Callable[[], object], reply: str, reason: str
) -> None:
    before = sqlite_data()
    model = ScriptedChatModel([reply])
    with pytest.raises(UnsafeSqlError, match=reason):
        sqlite_retriever(sqlite_path, model).retrieve(Query("q"))
    assert model.remaining == 0  # refused at once, not retried
    assert sqlite_data() == before


@pytest.mark.parametrize(
    ("statement", "refusal"),
    [
        ("DELETE FROM orders", "attempt to write a readonly database"),
        ("DROP TABLE orders", "attempt to write a readonly database"),
        (
            "WITH x AS (SELECT 1) UPDATE orders SET amount = 0",
            "attempt to write a readonly database",
        ),
        ("SELECT 1; DELETE FROM orders", "one statement at a time"),
        ("ATTACH DATABASE ':memory:' AS x", "too many attached databases"),
        # sqlite3 runs one statement per call: switching query_only off writes nothing,
        # and the next statement is the guard's again
        ("PRAGMA query_only = OFF", "no result set"),
        (
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n)"
            " SELECT count(*) FROM n",
            "interrupted after the 0.3s statement timeout",
        ),
    ],
)
@pytest.mark.parametrize("opened", ["url (mode=ro)", "engine (query_only)"])
def test_sqlite_refuses_writes_itself(
    sqlite_path: Path, sqlite_data: Callable[[], object], statement: str, refusal: str, opened: str
) -> None:
    """The statement bypasses the sqlglot check; the database refuses it."""
    before = sqlite_data()
    engine: sa.Engine | str = (
        f"sqlite:///{sqlite_path}"
        if opened.startswith("url")
        else sa.create_engine(f"sqlite:///{sqlite_path}")
    )
    retriever = SqlDatabaseContentRetriever(engine, ScriptedChatModel(), timeout_seconds=0.3)
    with pytest.raises(SqlExecutionError, match=refusal):
        retriever.executor.run(statement)
    assert sqlite_data() == before
    # the connection is usable afterwards, and an engine passed in is writable again
    assert retriever.executor.run("SELECT count(*) FROM orders").rows == ((4,),)
    if not opened.startswith("url"):
        with retriever.executor.engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO customers VALUES (7, 'Writer', NULL)"))


def test_timeout_is_fed_back_and_retried(sqlite_path: Path) -> None:
    slow = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
    model = ScriptedChatModel([slow, "SELECT count(*) AS n FROM orders"])
    retriever = sqlite_retriever(sqlite_path, model, timeout_seconds=0.3)
    [content] = retriever.retrieve(Query("how many orders"))
    assert content.text == "n\n4"
    assert "statement timeout" in model.prompts[1]


def test_bad_settings_are_named(sqlite_path: Path) -> None:
    model = ScriptedChatModel()
    url = f"sqlite:///{sqlite_path}"
    for option, value in [
        ("max_rows", 0),
        ("max_cell_chars", 0),
        ("max_result_bytes", True),
        ("timeout_seconds", -1),
        ("max_retries", -1),
        ("sample_rows", True),
    ]:
        with pytest.raises(InvalidArgumentError, match=option):
            SqlDatabaseContentRetriever(url, model, **{option: value})  # type: ignore[arg-type]
    with pytest.raises(PromptTemplateError, match="schema"):
        SqlDatabaseContentRetriever(url, model, system_prompt="only {dialect}")
    with pytest.raises(InvalidArgumentError, match="dialect 'mysql'"):
        SqlDatabaseContentRetriever(
            sa.create_engine("mysql+pymysql://u@127.0.0.1/x", module=NO_DRIVER), model
        )


@pytest.mark.integration
class TestPostgres:
    def test_good_query_and_schema(self, pg_engine: sa.Engine, pg_shop: tuple[str, str]) -> None:
        model = ScriptedChatModel([GOOD])
        retriever = SqlDatabaseContentRetriever(pg_engine, model, schema=pg_shop[1])
        [content] = retriever.retrieve(Query("Who spent the most?"))
        assert content.text.splitlines() == [
            "name | total",
            "Ada | 145.50",
            "Linus | 60.00",
            "Grace | 25.50",
        ]
        system = model.requests[0].messages[0].text
        assert "postgres database" in system
        assert "amount NUMERIC(8, 2)" in system
        assert "FOREIGN KEY (customer_id) REFERENCES customers(id)" in system

    def test_syntax_error_then_fix(self, pg_engine: sa.Engine, pg_shop: tuple[str, str]) -> None:
        model = ScriptedChatModel(
            ["SELECT nme FROM customers", "SELECT name FROM customers ORDER BY id"]
        )
        retriever = SqlDatabaseContentRetriever(pg_engine, model, schema=pg_shop[1], sample_rows=0)
        [content] = retriever.retrieve(Query("names"))
        assert content.text.splitlines() == ["name", "Ada", "Linus", "Grace"]
        assert 'column "nme" does not exist' in model.prompts[1]

    @pytest.mark.parametrize(
        "reply",
        [
            "DROP TABLE orders",
            "DELETE FROM orders",
            "WITH gone AS (DELETE FROM orders RETURNING *) SELECT * FROM gone",
            "WITH u AS (UPDATE orders SET amount = 0 RETURNING id) SELECT count(*) FROM u",
            "SELECT 1; DROP TABLE orders",
            "COPY (SELECT 1) TO PROGRAM 'touch /tmp/ragloom-pwned'",
            "SET TRANSACTION READ WRITE",
        ],
    )
    def test_hostile_sql_is_refused(
        self,
        pg_engine: sa.Engine,
        pg_shop: tuple[str, str],
        pg_data: Callable[[], object],
        reply: str,
    ) -> None:
        before = pg_data()
        model = ScriptedChatModel([reply])
        with pytest.raises(UnsafeSqlError):
            SqlDatabaseContentRetriever(pg_engine, model, schema=pg_shop[1]).retrieve(Query("q"))
        assert pg_data() == before

    @pytest.mark.parametrize(
        ("statement", "refusal"),
        [
            ("DELETE FROM orders", "cannot execute DELETE in a read-only transaction"),
            ("DROP TABLE orders", "cannot execute DROP TABLE in a read-only transaction"),
            # PostgreSQL names the top-level command (SELECT) for a write in a CTE
            (
                "WITH gone AS (DELETE FROM orders RETURNING *) SELECT * FROM gone",
                "cannot execute SELECT in a read-only transaction",
            ),
            (
                "SELECT * INTO stolen FROM orders",
                "cannot execute SELECT INTO in a read-only transaction",
            ),
            (
                "SELECT 1; DROP TABLE orders",
                "cannot insert multiple commands into a prepared statement",
            ),
            ("SELECT add_customer('Mallory')", "cannot execute INSERT in a read-only transaction"),
            (
                "SELECT nextval('order_ids')",
                "cannot execute nextval\\(\\) in a read-only transaction",
            ),
            (
                "SET TRANSACTION READ WRITE",
                "transaction read-write mode must be set before any query",
            ),
            (
                "SELECT set_config('transaction_read_only', 'off', false)",
                "transaction read-write mode must be set before any query",
            ),
            (
                "COPY (SELECT 1) TO PROGRAM 'touch /tmp/ragloom-pwned'",
                "permission denied to COPY to or from an external program",
            ),
            ("SELECT pg_sleep(5)", "canceling statement due to statement timeout"),
        ],
    )
    def test_database_refuses_writes_itself(
        self,
        pg_engine: sa.Engine,
        pg_shop: tuple[str, str],
        pg_data: Callable[[], object],
        statement: str,
        refusal: str,
    ) -> None:
        """The statement bypasses the sqlglot check; PostgreSQL refuses it (as a role that
        holds every privilege on the schema)."""
        before = pg_data()
        retriever = SqlDatabaseContentRetriever(
            pg_engine, ScriptedChatModel(), schema=pg_shop[1], timeout_seconds=0.5
        )
        with pytest.raises(SqlExecutionError, match=refusal):
            retriever.executor.run(statement)
        assert pg_data() == before
        assert not Path("/tmp/ragloom-pwned").exists()
        assert retriever.executor.run("SELECT count(*) FROM orders").rows == ((4,),)

    def test_pg_sleep_times_out_then_the_model_fixes_it(
        self, pg_engine: sa.Engine, pg_shop: tuple[str, str]
    ) -> None:
        model = ScriptedChatModel(["SELECT pg_sleep(5), 1", "SELECT count(*) AS n FROM orders"])
        retriever = SqlDatabaseContentRetriever(
            pg_engine, model, schema=pg_shop[1], timeout_seconds=0.5
        )
        [content] = retriever.retrieve(Query("how many orders"))
        assert content.text == "n\n4"
        assert "statement timeout" in model.prompts[1]

    def test_superuser_is_refused_unless_allowed(
        self, pg_admin: str, pg_shop: tuple[str, str]
    ) -> None:
        engine = sa.create_engine(pg_admin.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            retriever = SqlDatabaseContentRetriever(engine, ScriptedChatModel(), schema=pg_shop[1])
            with pytest.raises(SqlExecutionError, match="refusing to query as a superuser"):
                retriever.executor.run("SELECT 1")
            allowed = SqlDatabaseContentRetriever(
                engine, ScriptedChatModel(), schema=pg_shop[1], allow_superuser=True
            )
            assert allowed.executor.run("SELECT count(*) FROM customers").rows == ((3,),)
        finally:
            engine.dispose()

    def test_only_psycopg_driver(self) -> None:
        with pytest.raises(InvalidArgumentError, match="psycopg"):
            SqlDatabaseContentRetriever(
                sa.create_engine("postgresql+pg8000://u@127.0.0.1/x", module=NO_DRIVER),
                ScriptedChatModel(),
            )
