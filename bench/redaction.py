"""The cost of the one redaction (``redact_text``) per message: it runs on every outbound message and API answer.

    python bench/redaction.py [-n 2000]

Each body is cut or repeated to 4 KB: prose (an HTML error page), a JSON API answer with a few credentials in it,
a Java stack trace, a URL-encoded form, and a body made of nothing but credentials of every shape. Also a page of
the JSON API: 2,000 short strings, as ``redacted`` walks them. Prints the median and the 95th percentile of each, in
microseconds. The goal (issue 42): under 1 ms for a 4 KB body.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import time
from collections.abc import Callable

from monitor.core.redaction import redact_text, redacted

SIZE = 4096
PROSE = (
    "<html><head><title>503 Service Unavailable</title></head><body><h1>Service Unavailable</h1><p>The server is "
    "temporarily unable to service your request due to maintenance downtime or capacity problems. Please try again "
    "later.</p><hr><address>Apache/2.4.57 (Debian) Server at app.example.test Port 443</address></body></html>\n"
)
API = json.dumps(
    {
        "error": "upstream failed",
        "upstream": "http://svc:s3cr3tpw@10.1.2.3:8080/api?token=TOPSECRET123",
        "db": {"host": "db-internal.corp", "password": "hunter2 correct horse", "pool": {"max": 40, "used": 40}},
        "headers": {"Authorization": "Token glpat-Xy9zAbCdEfGhIjKlMnOp", "Cookie": "JSESSIONID=6A5F3C2B1D0E9F8A; theme=dark"},
        "trace_id": "3f786850e387550fdab836ed7e6dc881de23001b",
        "items": [{"id": i, "name": f"item-{i}", "state": "ok"} for i in range(8)],
    }
)
TRACE = (
    "org.springframework.dao.DataAccessResourceFailureException: Unable to acquire JDBC Connection\n"
    "\tat org.hibernate.exception.internal.SQLStateConversionDelegate.convert(SQLStateConversionDelegate.java:112)\n"
    "Caused by: java.sql.SQLTransientConnectionException: HikariPool-1 - Connection is not available, request timed "
    "out after 30000ms.\n\tat com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)\n"
    'Caused by: org.postgresql.util.PSQLException: FATAL: password authentication failed for user "app"\n'
)
FORM = "user=app&p%61ssword=s3cr3t-enc2&next=%2Fhome%3Fa%3D1&lang=en&q=monitoring+tools&page=2&"
SHAPES = (
    "creds admin:hunter2x pass hunter3y AKIAIOSFODNN7EXAMPLE wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY "
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c "
    "xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1 ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789\n"
    "Authorization: Token glpat-Xy9zAbCdEfGhIjKlMnOp\npw=Tr0ub4dor <password>xml-s3cr3t</password> "
    "password: 'hunter4 correct horse battery'\nCookie: JSESSIONID=6A5F3C2B1D0E9F8A7B6C; PHPSESSID=9k2j3h4g5f6d\n"
)


def four_kb(text: str) -> str:
    return (text * (SIZE // len(text) + 1))[:SIZE]


def timed(call: Callable[[], object], n: int) -> tuple[float, float]:
    """Median and 95th percentile of ``call``, in microseconds."""
    call()
    took = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        took.append((time.perf_counter() - start) * 1e6)
    took.sort()
    return statistics.median(took), took[int(len(took) * 0.95)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=2000)
    n = parser.parse_args().n
    bodies = {"prose (HTML)": PROSE, "JSON answer": API, "stack trace": TRACE, "URL-encoded form": FORM, "all shapes": SHAPES}
    print(f"redact_text on a {SIZE}-byte body, {n} calls each: median / p95 in µs")
    for name, text in bodies.items():
        body = four_kb(text)
        median, p95 = timed(functools.partial(redact_text, body), n)
        print(f"  {name:<18} {median:8.1f} {p95:8.1f}")
    page = {
        "items": [{"name": f"target-{i}", "state": "up", "detail": "", "url": f"http://10.0.0.{i % 250}:80/health"} for i in range(500)]
    }
    median, p95 = timed(lambda: redacted(page), max(20, n // 50))
    print(f"redacted on an API page of 2,000 strings: median {median / 1000:.2f} ms, p95 {p95 / 1000:.2f} ms")


if __name__ == "__main__":
    main()
