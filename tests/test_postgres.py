"""The tests' PostgreSQL (tests/postgres.py): a real server, a schema per use, SQLite paths redirected onto schemas."""

from __future__ import annotations

from pathlib import Path

import pytest
from postgres import Redirect, Schemas, with_params


def tables(url: str) -> list[str]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]


def test_a_url_keeps_its_options_and_gains_more() -> None:
    url = with_params(
        "postgresql://u@h:5/db?options=-cstatement_timeout%3D5s&sslmode=disable", options="-csearch_path=t_1", application_name="t_1"
    )
    assert url == ("postgresql://u@h:5/db?options=-cstatement_timeout%3D5s+-csearch_path%3Dt_1&sslmode=disable&application_name=t_1")


def test_each_url_is_a_schema_of_its_own(postgres_url: str, postgres_schemas: Schemas) -> None:
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        conn.execute("CREATE TABLE results (id integer)")
        schema = conn.execute("SELECT current_schema()").fetchone()
    assert schema is not None and schema[0].startswith(postgres_schemas.prefix)
    assert tables(postgres_url) == ["results"]
    name, other = postgres_schemas.fresh()
    assert tables(other) == []
    postgres_schemas.drop([name])


def test_a_dropped_schema_takes_the_connections_left_open_with_it(postgres_schemas: Schemas) -> None:
    import psycopg

    name, url = postgres_schemas.fresh()
    left_open = psycopg.connect(url)
    left_open.execute("CREATE TABLE results (id integer)")
    left_open.execute("SELECT * FROM results")  # idle in transaction: holds a lock the drop needs
    postgres_schemas.drop([name])
    with pytest.raises(psycopg.OperationalError):
        left_open.execute("SELECT 1")
    left_open.close()
    assert postgres_schemas.admin.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s", (name,)).fetchone() == (0,)


def test_a_path_maps_to_one_schema_and_memory_to_a_fresh_one(postgres_schemas: Schemas, tmp_path: Path) -> None:
    redirect = Redirect(postgres_schemas)
    first = redirect(tmp_path / "monitor.db")
    assert redirect(str(tmp_path / "sub" / ".." / "monitor.db")) == first
    assert redirect(tmp_path / "other.db") != first
    assert redirect(":memory:") != redirect(":memory:")
    assert redirect(first) == first
    redirect.close()
    assert postgres_schemas.admin.execute("SELECT count(*) FROM pg_namespace WHERE nspname = ANY(%s)", (redirect.names,)).fetchone() == (0,)


def test_a_store_goes_by_the_application_name_its_url_gives(postgres_schemas: Schemas) -> None:
    from monitor.store import Store

    name, url = postgres_schemas.fresh()
    named, unnamed = Store(url), Store(with_params(postgres_schemas.url, options=f"-csearch_path={name}"))
    shown = [
        row[0]
        for row in postgres_schemas.admin.execute(
            "SELECT application_name FROM pg_stat_activity WHERE application_name IN (%s, 'monitor') AND datname = current_database()",
            (name,),
        )
    ]
    assert sorted(shown) == sorted([name, "monitor"])
    named.close()
    unnamed.close()
    postgres_schemas.drop([name])
