"""What the users of ``_messy_script.py`` paste: stack traces, code and configs (one message each).

The traces are built from frame lists with a seeded generator (line numbers, which frames show
Python 3.11's ``^^^`` markers), so they are long and realistic but the same on every run. Each is
100-250 lines; ``tests/unit/test_messy_chat_benchmark.py`` checks it.
"""

# ruff: noqa: E501 - pasted traces, code and logs: their long lines are the content

from __future__ import annotations

import random
from collections.abc import Sequence

Frame = tuple[str, str, str]  # path, function, source line


def _frames(rng: random.Random, frames: Sequence[Frame]) -> list[str]:
    out = []
    for path, func, code in frames:
        out.append(f'  File "{path}", line {rng.randint(31, 2400)}, in {func}')
        out.append(f"    {code}")
        if rng.random() < 0.45:
            start = rng.randint(0, max(0, len(code) // 3))
            out.append("    " + " " * start + "^" * max(3, min(len(code) - start, rng.randint(6, 48))))
    return out


def _trace(seed: int, blocks: Sequence[tuple[Sequence[Frame], Sequence[str], str]], head: Sequence[str]) -> str:
    """Chained tracebacks: each block is (frames, exception lines, the sentence that links it to the next)."""
    rng = random.Random(seed)
    lines = list(head)
    for frames, exception, link in blocks:
        lines.append("Traceback (most recent call last):")
        lines += _frames(rng, frames)
        lines += exception
        if link:
            lines += ["", link, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------- Maya: Celery + SQLAlchemy

_SP = "/usr/local/lib/python3.11/site-packages"
_APP = "/home/maya/code/falcon/falcon"

_SA_EXEC: list[Frame] = [
    (f"{_SP}/sqlalchemy/engine/base.py", "_exec_single_context", "self.dialect.do_execute("),
    (f"{_SP}/sqlalchemy/engine/default.py", "do_execute", "cursor.execute(statement, parameters)"),
    (f"{_SP}/psycopg2/extras.py", "execute", "return super().execute(query, vars)"),
    (f"{_SP}/sqlalchemy/engine/base.py", "_execute_context", "return self._exec_single_context("),
    (f"{_SP}/sqlalchemy/engine/base.py", "_execute_clauseelement", "ret = self._execute_context("),
    (f"{_SP}/sqlalchemy/sql/elements.py", "_execute_on_connection", "return connection._execute_clauseelement("),
    (f"{_SP}/sqlalchemy/engine/base.py", "execute", "return meth("),
    (f"{_SP}/sqlalchemy/orm/persistence.py", "_emit_insert_statements", "result = connection.execute("),
    (f"{_SP}/sqlalchemy/orm/persistence.py", "save_obj", "_emit_insert_statements("),
    (f"{_SP}/sqlalchemy/orm/unitofwork.py", "execute", "persistence.save_obj("),
    (f"{_SP}/sqlalchemy/orm/unitofwork.py", "execute", "rec.execute(self)"),
    (f"{_SP}/sqlalchemy/orm/session.py", "_flush", "flush_context.execute()"),
    (f"{_SP}/sqlalchemy/util/langhelpers.py", "__exit__", "raise exc_value.with_traceback(exc_tb)"),
    (f"{_SP}/sqlalchemy/orm/session.py", "_flush", "with util.safe_reraise():"),
    (f"{_SP}/sqlalchemy/orm/session.py", "flush", "self._flush(objects)"),
    (f"{_SP}/sqlalchemy/orm/session.py", "_autoflush", "self.flush()"),
    (f"{_SP}/sqlalchemy/orm/session.py", "commit", "trans.commit(_to_root=True)"),
    (f"{_SP}/sqlalchemy/orm/state_changes.py", "_go", "ret_value = fn(self, *arg, **kw)"),
    (f"{_SP}/sqlalchemy/orm/session.py", "_prepare_impl", "self.session.flush()"),
]
_CELERY: list[Frame] = [
    (f"{_SP}/celery/app/trace.py", "trace_task", "R = retval = fun(*args, **kwargs)"),
    (f"{_SP}/celery/app/trace.py", "__protected_call__", "return self.run(*args, **kwargs)"),
    (f"{_SP}/celery/app/autoretry.py", "run", "return task._orig_run(*args, **kwargs)"),
    (f"{_APP}/payments/tasks.py", "settle_batch", "ledger.post_entries(batch_id, entries)"),
    (f"{_APP}/payments/ledger.py", "post_entries", "self._insert(entry, key=idempotency_key(entry))"),
    (f"{_APP}/payments/ledger.py", "_insert", "session.add(LedgerEntry(**entry.as_row(), idempotency_key=key))"),
    (f"{_APP}/db/session.py", "__exit__", "self.session.commit()"),
    (f"{_APP}/db/session.py", "commit", "return self._session.commit()"),
    (f"{_APP}/payments/service.py", "settle", "self.ledger.flush_pending(tz=ZoneInfo('Europe/Lisbon'))"),
    (f"{_APP}/payments/service.py", "_flush_with_retry", "return fn(*args, **kwargs)"),
    (f"{_APP}/payments/ledger.py", "flush_pending", "self.session.execute(insert(LedgerEntry), rows)"),
]
_KOMBU: list[Frame] = [
    (f"{_SP}/celery/worker/request.py", "on_failure", "self.task.backend.mark_as_failure("),
    (f"{_SP}/celery/backends/base.py", "mark_as_failure", "self.store_result(task_id, exc, state,"),
    (f"{_SP}/celery/backends/base.py", "store_result", "self._store_result(task_id, result, state, traceback,"),
    (f"{_SP}/celery/backends/redis.py", "_set", "pipe.execute()"),
    (f"{_SP}/kombu/utils/functional.py", "__call__", "return self.__value__"),
    (f"{_SP}/celery/app/trace.py", "handle_failure", "task.backend.mark_as_failure("),
    (f"{_SP}/celery/app/trace.py", "handle_error_state", "return {"),
    (f"{_SP}/celery/app/trace.py", "on_error", "R = I.handle_error_state("),
    (f"{_SP}/billiard/pool.py", "workloop", "result = (True, prepare_result(fun(*args, **kwargs)))"),
    (f"{_SP}/celery/app/trace.py", "_fast_trace_task", "R, I, T, Rstr = tasks[task].__trace__("),
]

_UNIQUE = 'psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint "ledger_entries_idempotency_key_key"'
_DETAIL = "DETAIL:  Key (idempotency_key)=(pay_8f2c1e0b9d7a4c55) already exists."
_SQL = (
    "[SQL: INSERT INTO ledger_entries (batch_id, account_id, amount_cents, currency, booked_at, idempotency_key) "
    "VALUES (%(batch_id)s, %(account_id)s, %(amount_cents)s, %(currency)s, %(booked_at)s, %(idempotency_key)s) "
    "RETURNING ledger_entries.id]"
)


def _maya_params(rng: random.Random) -> list[str]:
    rows = []
    for _ in range(14):
        rows.append(
            f"  {{'batch_id': 'b_{rng.randrange(16**8):08x}', 'account_id': {rng.randint(10000, 99999)}, "
            f"'amount_cents': {rng.randint(100, 990000)}, 'currency': 'EUR', "
            f"'booked_at': '2024-02-03T10:{rng.randint(10, 59)}:{rng.randint(10, 59)}+00:00', "
            f"'idempotency_key': 'pay_{rng.randrange(16**16):016x}'}},"
        )
    return ["[parameters: (", *rows, ")]"]


def maya_trace() -> str:
    rng = random.Random(101)
    head = [
        "[2024-02-03 10:31:07,412: ERROR/ForkPoolWorker-3] Task falcon.payments.tasks.settle_batch"
        "[5d1f0c2e-6a1b-4f0e-9a43-1c2d3e4f5a6b] raised unexpected: IntegrityError('(psycopg2.errors.UniqueViolation) "
        'duplicate key value violates unique constraint "ledger_entries_idempotency_key_key"\')',
        "[2024-02-03 10:31:07,413: WARNING/ForkPoolWorker-3] db host db-primary.berlin.pagamento.internal, "
        "pool_size=20, max_overflow=5, TIME_ZONE=Europe/Lisbon",
    ]
    params = _maya_params(rng)
    return _trace(
        101,
        [
            (_SA_EXEC[:3], [_UNIQUE, _DETAIL], "The above exception was the direct cause of the following exception:"),
            (
                _CELERY + _SA_EXEC[::-1] + _SA_EXEC[:9],
                [
                    "sqlalchemy.exc.IntegrityError: (psycopg2.errors.UniqueViolation) duplicate key value violates "
                    'unique constraint "ledger_entries_idempotency_key_key"',
                    _DETAIL,
                    "",
                    _SQL,
                    *params,
                    "(Background on this error at: https://sqlalche.me/e/20/gkpj)",
                ],
                "During handling of the above exception, another exception occurred:",
            ),
            (
                _KOMBU + _CELERY[:5] + _SA_EXEC[14:] + _SA_EXEC[:2],
                [
                    "sqlalchemy.exc.IntegrityError: (psycopg2.errors.UniqueViolation) duplicate key value violates "
                    'unique constraint "ledger_entries_idempotency_key_key"',
                    _DETAIL,
                ],
                "",
            ),
        ],
        head,
    )


MAYA_CODE = '''```python
import functools
import logging
import random
import time

log = logging.getLogger("kestrel.retry")


def retry(times=5, base=0.2, cap=8.0, exceptions=(Exception,)):
    """Retry with exponential backoff and full jitter."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            attempt = 0
            started = time.time()
            while attempt < times:
                try:
                    return fn(*args, **kwargs)
                except exceptions as exc:
                    attempt += 1
                    delay = min(cap, base * 2 ** attempt) * random.random()
                    log.warning("retry %s/%s after %.2fs: %r", attempt, times, delay, exc)
                    if time.time() - started > cap * times:
                        break
                    time.sleep(delay)
            log.error("giving up on %s", fn.__name__)

        return inner

    return wrap


@retry(times=3, exceptions=(ConnectionError, TimeoutError))
def fetch_fx_rates(client, day):
    return client.get(f"/fx/{day:%Y-%m-%d}").json()["rates"]
```
why does this return None sometimes instead of raising??'''

MAYA_COMPOSE = """services:
  api:
    image: registry.pagamento.internal/kestrel/api:2024.05.3
    restart: unless-stopped
    env_file: .env
    environment:
      DATABASE_URL: postgresql+psycopg2://kestrel:${POSTGRES_PASSWORD}@db:5432/kestrel
      REDIS_URL: redis://redis:6379/0
      TZ: Europe/Berlin
    ports:
      - "8080:8080"
    depends_on:
      db:
        condition: service_healthy
      redis:
        condition: service_started
  worker:
    image: registry.pagamento.internal/kestrel/api:2024.05.3
    command: celery -A kestrel.worker worker -l info --concurrency 4
    restart: unless-stopped
    env_file: .env
    depends_on:
      - db
      - redis
  db:
    image: postgres:16-alpine
    restart: always
    environment:
      POSTGRES_USER: kestrel
      POSTGRES_DB: kestrel
      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD}
    volumes:
      - pgdata:/var/lib/postgresql/data
    healthcheck:
      test: ["CMD-SHELL", "pg_isready"]
      interval: 5s
      timeout: 3s
      retries: 5
  redis:
    image: redis:7-alpine
    restart: always
volumes:
  pgdata: {}

db-1  | FATAL:  role "root" does not exist
db-1  | FATAL:  role "root" does not exist
db-1 exited with code 1 (restarting)"""


# ---------------------------------------------------------------------- Lena: pandas in a notebook

_LSP = "/Users/lena/.venvs/gbc/lib/python3.11/site-packages"
_PANDAS: list[Frame] = [
    (f"{_LSP}/pandas/core/indexes/base.py", "get_loc", "return self._engine.get_loc(casted_key)"),
    ("index.pyx", "pandas._libs.index.IndexEngine.get_loc", "cpdef get_loc(self, object val):"),
    ("index.pyx", "pandas._libs.index.IndexEngine.get_loc", "return self.mapping.get_item(val)"),
    (
        "pandas/_libs/hashtable_class_helper.pxi",
        "pandas._libs.hashtable.PyObjectHashTable.get_item",
        "raise KeyError(val)",
    ),
]
_NOTEBOOK: list[Frame] = [
    (f"{_LSP}/ipykernel/kernelbase.py", "dispatch_queue", "await self.process_one()"),
    (f"{_LSP}/ipykernel/kernelbase.py", "process_one", "await dispatch(*args)"),
    (f"{_LSP}/ipykernel/kernelbase.py", "dispatch_shell", "await result"),
    (f"{_LSP}/ipykernel/ipkernel.py", "execute_request", "reply_content = await reply_content"),
    (f"{_LSP}/ipykernel/ipkernel.py", "do_execute", "res = shell.run_cell("),
    (f"{_LSP}/ipykernel/zmqshell.py", "run_cell", "return super().run_cell(*args, **kwargs)"),
    (f"{_LSP}/IPython/core/interactiveshell.py", "run_cell", "result = self._run_cell("),
    (f"{_LSP}/IPython/core/interactiveshell.py", "_run_cell", "result = runner(coro)"),
    (f"{_LSP}/IPython/core/async_helpers.py", "_pseudo_sync_runner", "coro.send(None)"),
    (
        f"{_LSP}/IPython/core/interactiveshell.py",
        "run_cell_async",
        "has_raised = await self.run_ast_nodes(code_ast.body, cell_name,",
    ),
    (f"{_LSP}/IPython/core/interactiveshell.py", "run_ast_nodes", "if await self.run_code(code, result, async_=asy):"),
    (f"{_LSP}/IPython/core/interactiveshell.py", "run_code", "exec(code_obj, self.user_global_ns, self.user_ns)"),
    ("/var/folders/7k/T/ipykernel_48213/2290417763.py", "<module>", "weekly = summarise_training(runs, by='week')"),
    (
        "/Users/lena/george-brown/module3/training.py",
        "summarise_training",
        "out = add_rolling(out, 'weekly_km', window=4)",
    ),
    (
        "/Users/lena/george-brown/module3/training.py",
        "add_rolling",
        "df[f'{col}_avg'] = df[col].rolling(window).mean()",
    ),
    ("/Users/lena/george-brown/module3/training.py", "pace_per_km", "return df['moving_time_s'] / df['weekly_km']"),
]
_FRAME_GETITEM: list[Frame] = [
    (f"{_LSP}/pandas/core/frame.py", "__getitem__", "indexer = self.columns.get_loc(key)"),
    (f"{_LSP}/pandas/core/generic.py", "_get_item_cache", "loc = self.columns.get_loc(item)"),
    (f"{_LSP}/pandas/core/frame.py", "_get_value", "series = self._get_item_cache(col)"),
    (f"{_LSP}/pandas/core/indexing.py", "__getitem__", "return self.obj._get_value(*key, takeable=self._takeable)"),
    (f"{_LSP}/pandas/core/ops/common.py", "new_method", "return method(self, other)"),
    (f"{_LSP}/pandas/core/arraylike.py", "__truediv__", "return self._arith_method(other, operator.truediv)"),
    (f"{_LSP}/pandas/core/series.py", "_arith_method", "return base.IndexOpsMixin._arith_method(self, other, op)"),
    (f"{_LSP}/pandas/core/window/rolling.py", "mean", "return self._apply("),
    (
        f"{_LSP}/pandas/core/window/rolling.py",
        "_apply",
        "return self._apply_columnwise(homogeneous_func, name, numeric_only)",
    ),
    (
        f"{_LSP}/pandas/core/window/rolling.py",
        "_apply_columnwise",
        "obj = self._create_data(self._selected_obj, numeric_only)",
    ),
    (f"{_LSP}/pandas/core/groupby/groupby.py", "__getitem__", "return super().__getitem__(key)"),
    (f"{_LSP}/pandas/core/base.py", "__getitem__", 'raise KeyError(f"Column not found: {key}")'),
]


def lena_trace() -> str:
    rng = random.Random(202)
    head = [
        "---------------------------------------------------------------------------",
        "KeyError                                  Traceback (most recent call last)",
        "Cell In[14], line 3",
        "      1 runs = pd.read_csv('marathon_training_2024.csv', parse_dates=['date'])",
        "      2 runs['pace_min_per_km'] = runs['moving_time_s'] / 60 / runs['distance_km']",
        "----> 3 weekly = summarise_training(runs, by='week')",
        "columns: ['date', ' Weekly KM', 'distance_km', 'moving_time_s', 'avg_hr', 'shoe', 'route']",
    ]
    preview = [
        f"  {rng.randint(0, 300):>4}  2024-02-{rng.randint(1, 29):02d}  {rng.uniform(5, 32):5.1f}  "
        f"{rng.randint(1500, 11000):>6}  {rng.randint(128, 172)}  pegasus  {rng.choice(['lakeshore', 'don valley', 'humber', 'high park'])}"
        for _ in range(16)
    ]
    return _trace(
        202,
        [
            (
                _PANDAS,
                ["KeyError: 'weekly_km'"],
                "The above exception was the direct cause of the following exception:",
            ),
            (
                _NOTEBOOK + _FRAME_GETITEM + _PANDAS[:1],
                ["KeyError: 'weekly_km'", "", "runs.head(16):", *preview],
                "During handling of the above exception, another exception occurred:",
            ),
            (_NOTEBOOK[10:] + _FRAME_GETITEM[:6] + _PANDAS, ["KeyError: 'weekly_km'"], ""),
        ],
        head,
    )


LENA_CODE = """```python
import pandas as pd

runs = pd.read_csv("runs.csv")
runs["date"] = pd.to_datetime(runs["date"])
weekly = runs["distance_km"].resample("W").sum()
long_runs = runs[runs["distance_km"] > 18].groupby(runs["date"].dt.isocalendar().week)["distance_km"].max()
print(weekly.tail(8))
print(long_runs)
```
output is all NaN??"""

LENA_LOG = """2024-05-20 19:02:11.402 WARNING (MainThread) [homeassistant.components.tplink] Device 192.168.0.47 (Kasa KP115 "Monstera lamp") unavailable
2024-05-20 19:02:11.403 DEBUG (MainThread) [homeassistant.components.tplink.coordinator] Finished fetching 192.168.0.47 data in 10.003 seconds (success: False)
2024-05-20 19:02:41.411 ERROR (MainThread) [homeassistant.components.tplink] Unable to connect to the device: 192.168.0.47: [Errno 113] Host is unreachable
2024-05-20 19:03:11.500 DEBUG (MainThread) [homeassistant.components.dhcp] Matched DHCP request 54:af:97:3c:11:0e hostname=KP115 ip=192.168.0.52 lease=3600
2024-05-20 19:03:12.020 INFO (MainThread) [homeassistant.components.tplink] Discovered new device at 192.168.0.52 (KP115)
2024-05-20 19:03:12.021 WARNING (MainThread) [homeassistant.config_entries] Config entry 'Monstera lamp' for tplink integration not ready yet: Unable to connect to 192.168.0.47; Retrying in background
2024-05-20 20:03:12.610 DEBUG (MainThread) [homeassistant.components.dhcp] Matched DHCP request 54:af:97:3c:11:0e hostname=KP115 ip=192.168.0.58 lease=3600
2024-05-20 20:03:13.002 WARNING (MainThread) [homeassistant.components.tplink] Device 192.168.0.52 (Kasa KP115 "Monstera lamp") unavailable
2024-05-20 20:03:43.019 ERROR (MainThread) [homeassistant.components.tplink] Unable to connect to the device: 192.168.0.52: [Errno 113] Host is unreachable
2024-05-20 20:04:02.114 INFO (MainThread) [homeassistant.components.automation.pretzel_feeder] Pretzel feeder: Running automation actions
2024-05-20 20:04:02.115 INFO (MainThread) [homeassistant.components.automation.pretzel_feeder] Pretzel feeder: Executing step call service
2024-05-20 20:33:13.501 WARNING (MainThread) [homeassistant.config_entries] Config entry 'Monstera lamp' for tplink integration not ready yet: Unable to connect to 192.168.0.52; Retrying in background
2024-05-20 21:03:14.033 DEBUG (MainThread) [homeassistant.components.dhcp] Matched DHCP request 54:af:97:3c:11:0e hostname=KP115 ip=192.168.0.61 lease=3600
2024-05-20 21:03:14.500 WARNING (MainThread) [homeassistant.components.tplink] Device 192.168.0.58 (Kasa KP115 "Monstera lamp") unavailable"""


# ---------------------------------------------------------------------- Wei: FastAPI + httpx

_WSP = "/home/wei/side/hawker-bot/.venv/lib/python3.12/site-packages"
_WAPP = "/home/wei/side/hawker-bot/app"
_UVICORN: list[Frame] = [
    (
        f"{_WSP}/uvicorn/protocols/http/httptools_impl.py",
        "run_asgi",
        "result = await app(  # type: ignore[func-returns-value]",
    ),
    (f"{_WSP}/uvicorn/middleware/proxy_headers.py", "__call__", "return await self.app(scope, receive, send)"),
    (f"{_WSP}/fastapi/applications.py", "__call__", "await super().__call__(scope, receive, send)"),
    (f"{_WSP}/starlette/applications.py", "__call__", "await self.middleware_stack(scope, receive, send)"),
    (f"{_WSP}/starlette/middleware/errors.py", "__call__", "raise exc"),
    (f"{_WSP}/starlette/middleware/errors.py", "__call__", "await self.app(scope, receive, _send)"),
    (
        f"{_WSP}/starlette/middleware/exceptions.py",
        "__call__",
        "await wrap_app_handling_exceptions(self.app, conn)(scope, receive, send)",
    ),
    (f"{_WSP}/starlette/_exception_handler.py", "wrapped_app", "raise exc"),
    (f"{_WSP}/starlette/_exception_handler.py", "wrapped_app", "await app(scope, receive, sender)"),
    (f"{_WSP}/starlette/routing.py", "__call__", "await self.middleware_stack(scope, receive, send)"),
    (f"{_WSP}/starlette/routing.py", "app", "await route.handle(scope, receive, send)"),
    (f"{_WSP}/starlette/routing.py", "handle", "await self.app(scope, receive, send)"),
    (f"{_WSP}/starlette/routing.py", "app", "await wrap_app_handling_exceptions(app, request)(scope, receive, send)"),
    (f"{_WSP}/fastapi/routing.py", "app", "raw_response = await run_endpoint_function("),
    (f"{_WSP}/fastapi/routing.py", "run_endpoint_function", "return await dependant.call(**values)"),
    (f"{_WAPP}/routes/stalls.py", "cheapest", "prices = await scraper.prices(dish=dish, area=area)"),
    (f"{_WAPP}/scraper.py", "prices", "pages = await asyncio.gather(*(self._page(url) for url in urls))"),
    (f"{_WAPP}/scraper.py", "_page", "async with httpx.AsyncClient(base_url=API) as client:"),
    (
        f"{_WAPP}/scraper.py",
        "_page",
        "resp = await client.get(url, params={'dish': 'chilli crab', 'area': 'east coast'})",
    ),
]
_HTTPX: list[Frame] = [
    (f"{_WSP}/httpx/_client.py", "get", "return await self.request("),
    (
        f"{_WSP}/httpx/_client.py",
        "request",
        "return await self.send(request, auth=auth, follow_redirects=follow_redirects)",
    ),
    (f"{_WSP}/httpx/_client.py", "send", "response = await self._send_handling_auth("),
    (f"{_WSP}/httpx/_client.py", "_send_handling_auth", "response = await self._send_handling_redirects("),
    (f"{_WSP}/httpx/_client.py", "_send_handling_redirects", "response = await self._send_single_request(request)"),
    (f"{_WSP}/httpx/_client.py", "_send_single_request", "response = await transport.handle_async_request(request)"),
    (f"{_WSP}/httpx/_transports/default.py", "handle_async_request", "with map_httpcore_exceptions():"),
    ("/usr/lib/python3.12/contextlib.py", "__exit__", "self.gen.throw(value)"),
    (f"{_WSP}/httpx/_transports/default.py", "map_httpcore_exceptions", "raise mapped_exc(message) from exc"),
]
_HTTPCORE: list[Frame] = [
    (
        f"{_WSP}/httpx/_transports/default.py",
        "handle_async_request",
        "resp = await self._pool.handle_async_request(req)",
    ),
    (f"{_WSP}/httpcore/_async/connection_pool.py", "handle_async_request", "raise exc from None"),
    (
        f"{_WSP}/httpcore/_async/connection_pool.py",
        "handle_async_request",
        "response = await connection.handle_async_request(",
    ),
    (
        f"{_WSP}/httpcore/_async/connection.py",
        "handle_async_request",
        "return await self._connection.handle_async_request(request)",
    ),
    (f"{_WSP}/httpcore/_async/http11.py", "handle_async_request", "raise exc"),
    (f"{_WSP}/httpcore/_async/http11.py", "handle_async_request", ") = await self._receive_response_headers(**kwargs)"),
    (
        f"{_WSP}/httpcore/_async/http11.py",
        "_receive_response_headers",
        "event = await self._receive_event(timeout=timeout)",
    ),
    (f"{_WSP}/httpcore/_async/http11.py", "_receive_event", "data = await self._network_stream.read("),
    (f"{_WSP}/httpcore/_backends/anyio.py", "read", "with map_exceptions(exc_map):"),
    ("/usr/lib/python3.12/contextlib.py", "__exit__", "self.gen.throw(value)"),
    (f"{_WSP}/httpcore/_exceptions.py", "map_exceptions", "raise to_exc(exc) from exc"),
]
_ANYIO: list[Frame] = [
    (
        f"{_WSP}/anyio/streams/tls.py",
        "receive",
        "data = await self._call_sslobject_method(self._ssl_object.read, max_bytes)",
    ),
    (f"{_WSP}/anyio/streams/tls.py", "_call_sslobject_method", "data = await self.transport_stream.receive()"),
    (f"{_WSP}/anyio/_backends/_asyncio.py", "receive", "await self._protocol.read_event.wait()"),
    ("/usr/lib/python3.12/asyncio/locks.py", "wait", "await fut"),
    (f"{_WSP}/httpcore/_backends/anyio.py", "read", "return await self._stream.receive(max_bytes=max_bytes)"),
    (f"{_WSP}/anyio/_core/_tasks.py", "__exit__", "raise TimeoutError"),
]


def wei_trace() -> str:
    head = [
        'INFO:     172.18.0.1:51544 - "GET /api/cheapest?dish=chilli%20crab&area=east%20coast HTTP/1.1" 500 Internal Server Error',
        "ERROR:    Exception in ASGI application",
    ]
    return _trace(
        303,
        [
            (_ANYIO, ["TimeoutError"], "During handling of the above exception, another exception occurred:"),
            (
                _HTTPCORE,
                ["httpcore.ReadTimeout"],
                "The above exception was the direct cause of the following exception:",
            ),
            (
                _UVICORN + _HTTPX + _HTTPCORE[:2],
                ["httpx.ReadTimeout"],
                "During handling of the above exception, another exception occurred:",
            ),
            (
                [*_UVICORN[:16], (f"{_WAPP}/scraper.py", "prices", "raise ScrapeFailed(area, dish) from exc")],
                [
                    "app.scraper.ScrapeFailed: 3 of 7 stall pages failed for dish='chilli crab' area='east coast' "
                    "(https://api.hawkerdata.sg/v2/stalls): httpx.ReadTimeout"
                ],
                "",
            ),
        ],
        head,
    )


WEI_SQL = """```sql
-- payments funnel, last 28 days
SELECT
  date_trunc('day', s.started_at)              AS day,
  count(DISTINCT s.session_id)                 AS sessions,
  count(DISTINCT p.payment_id)                 AS attempts,
  count(DISTINCT p.payment_id) FILTER (WHERE p.status = 'captured') AS captured,
  round(100.0 * count(DISTINCT p.payment_id) / nullif(count(DISTINCT s.session_id), 0), 2) AS attempt_rate
FROM checkout_sessions s
LEFT JOIN payments p
  ON p.session_id = s.session_id
WHERE s.started_at >= now() - interval '28 days'
  AND s.market = 'SG'
  AND p.status IN ('captured', 'failed', 'pending')
GROUP BY 1
ORDER BY 1;
```
sessions drops by like 40% vs the dashboard??"""

WEI_NGINX = """server {
    listen 80;
    server_name bot.weichen.dev;
    return 301 https://$host$request_uri;
}

server {
    listen 443 ssl http2;
    server_name bot.weichen.dev;

    ssl_certificate     /etc/letsencrypt/live/bot.weichen.dev/fullchain.pem;
    ssl_certificate_key /etc/letsencrypt/live/bot.weichen.dev/privkey.pem;

    access_log /var/log/nginx/hawker-bot.access.log;
    error_log  /var/log/nginx/hawker-bot.error.log warn;

    location /api {
        proxy_pass http://127.0.0.1:8000/;
        proxy_set_header Host $host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_read_timeout 60s;
    }

    location / {
        root /srv/hawker-bot/web;
        try_files $uri /index.html;
    }
}

# tail -n 4 /var/log/nginx/hawker-bot.access.log
203.0.113.24 - - [26/May/2024:19:02:11 +1000] "GET /api/stalls?area=chatswood HTTP/2.0" 404 22 "-" "python-httpx/0.27.0"
203.0.113.24 - - [26/May/2024:19:02:13 +1000] "GET /api/cheapest?dish=laksa HTTP/2.0" 404 22 "-" "python-httpx/0.27.0"
198.51.100.7 - - [26/May/2024:19:04:40 +1000] "GET / HTTP/2.0" 200 1832 "-" "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X)"
198.51.100.7 - - [26/May/2024:19:04:41 +1000] "GET /api/stalls HTTP/2.0" 404 22 "https://bot.weichen.dev/" "Mozilla/5.0 (iPhone)"
upstream log: "GET //stalls?area=chatswood HTTP/1.0" 404"""
