"""Cost tracker: every LLM call's spend, by provider, model, intent and tenant, with daily and monthly budgets.

Fed at runtime from two places: the provider router's listener (calls made by this process)
and the usage that downstream answers report (RAG answers carry their own cost). Prices come
from the shared table in ``services.providers.pricing``. Days and months are UTC; "week" is
the last seven days. Budgets are mesh-wide, plus optional per-tenant limits so that one tenant
cannot spend the whole mesh's budget; the tenant is the one bound to the request that made the call.
"""

from __future__ import annotations

import contextvars
import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from services.orchestrator.database import SqlDatabase
from services.providers.base import Usage
from services.providers.pricing import PriceTable
from services.runtime import domain_metrics, request_context
from services.runtime.errors import InvalidArgument, ResourceExhausted

PERIODS = ("today", "week", "month")
UNATTRIBUTED = "unattributed"

# '' marks records made outside a request, and those made before tenants were tracked.
_TENANT_COLUMN = "tenant TEXT NOT NULL DEFAULT ''"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS cost_records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    intent TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    {_TENANT_COLUMN}
);
CREATE INDEX IF NOT EXISTS cost_records_ts ON cost_records (ts);
"""
# Created after the migration: an old table has no tenant column to index until then.
_TENANT_INDEX = "CREATE INDEX IF NOT EXISTS cost_records_tenant_ts ON cost_records (tenant, ts);"

_intent: contextvars.ContextVar[str] = contextvars.ContextVar("docuthinker_cost_intent", default=UNATTRIBUTED)


@contextmanager
def intent_scope(intent: str) -> Iterator[None]:
    """Attributes the LLM calls made inside the block (in this task and its children) to ``intent``."""
    token = _intent.set(intent)
    try:
        yield
    finally:
        _intent.reset(token)


def current_intent() -> str:
    return _intent.get()


@dataclass
class SpendLog:
    costs: list[float]

    @property
    def total(self) -> float:
        return sum(self.costs)


_spend: contextvars.ContextVar[SpendLog | None] = contextvars.ContextVar("docuthinker_spend", default=None)


@contextmanager
def track_spend() -> Iterator[SpendLog]:
    """Sums what the calls made inside the block cost (this task and the tasks it starts)."""
    log = SpendLog([])
    token = _spend.set(log)
    try:
        yield log
    finally:
        _spend.reset(token)


@dataclass(frozen=True)
class Bucket:
    cost: float = 0.0
    requests: int = 0


@dataclass(frozen=True)
class TenantBudget:
    tenant: str
    daily_budget: float
    """0 means no per-tenant limit (the mesh's budget still applies)."""
    monthly_budget: float
    daily_spent: float
    monthly_spent: float

    def limits(self) -> list[tuple[str, float, float]]:
        """(budget, spent, limit) of each limit that applies; none without a tenant (no caller to hold to it)."""
        if not self.tenant:
            return []
        pairs = (("daily", self.daily_spent, self.daily_budget), ("monthly", self.monthly_spent, self.monthly_budget))
        return [(name, spent, limit) for name, spent, limit in pairs if limit > 0]


@dataclass(frozen=True)
class BudgetStatus:
    daily_budget: float
    monthly_budget: float
    daily_spent: float
    monthly_spent: float
    tenant: TenantBudget
    """The caller's tenant."""
    warning: bool
    """A budget, the mesh's or the caller tenant's, is at or beyond the warning ratio."""


@dataclass(frozen=True)
class CostReport:
    period: str
    by_provider: dict[str, Bucket]
    by_intent: dict[str, Bucket]
    total_cost: float
    total_requests: int
    budget: BudgetStatus
    tenant_total: Bucket
    """The caller tenant's spend in the period."""


class CostTracker:
    def __init__(
        self,
        db: SqlDatabase,
        prices: PriceTable,
        *,
        daily_budget: float = 10.0,
        monthly_budget: float = 200.0,
        tenant_daily_budget: float = 0.0,
        tenant_monthly_budget: float = 0.0,
        warning_ratio: float = 0.8,
        retention_days: int = 62,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._db = db
        self.prices = prices
        self.daily_budget = daily_budget
        self.monthly_budget = monthly_budget
        self.tenant_daily_budget = tenant_daily_budget
        self.tenant_monthly_budget = tenant_monthly_budget
        self.warning_ratio = warning_ratio
        self._retention_s = retention_days * 86_400
        self._clock = clock
        if db.embedded:  # PostgreSQL's schema is its versioned migrations'
            db.script(_SCHEMA)
            self._add_tenant_column()
            db.script(_TENANT_INDEX)

    def _add_tenant_column(self) -> None:
        """Migrates a ledger created before tenants were tracked; its rows keep tenant ''."""
        with self._db.transaction() as conn:
            columns = {row["name"] for row in conn.execute("PRAGMA table_info(cost_records)")}
            if "tenant" not in columns:
                conn.execute(f"ALTER TABLE cost_records ADD COLUMN {_TENANT_COLUMN}")

    def record(self, provider: str, model: str, usage: Usage, intent: str | None = None) -> float:
        """Stores one call; its cost is ``usage.cost_usd`` when the caller priced it, else the table's."""
        cost = usage.cost_usd if usage.cost_usd > 0 else self.prices.price_of(model).cost(usage)
        now = self._clock()
        with self._db.transaction() as conn:
            conn.execute(
                "INSERT INTO cost_records (ts, tenant, provider, model, intent, input_tokens, output_tokens,"
                " cache_read_tokens, cache_write_tokens, cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    now,
                    _caller_tenant(),
                    provider,
                    model,
                    intent or current_intent(),
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    cost,
                ),
            )
            conn.execute("DELETE FROM cost_records WHERE ts < ?", (now - self._retention_s,))
        domain_metrics.LLM_COST.labels(provider, model).inc(cost)
        spend = _spend.get()
        if spend is not None:
            spend.costs.append(cost)
        return cost

    def estimate(self, model: str, prompt_tokens: int, output_tokens: int) -> float:
        """Upper-bound cost of a call before it is made (no cache discount assumed)."""
        return self.prices.price_of(model).cost(Usage(input_tokens=prompt_tokens, output_tokens=output_tokens))

    def budget(self) -> BudgetStatus:
        """The mesh's budgets and the caller tenant's."""
        now = self._clock()
        daily = self._spent_since(_day_start(now))
        monthly = self._spent_since(_month_start(now))
        tenant = self._tenant_budget(_caller_tenant(), now)
        limits = [("daily", daily, self.daily_budget), ("monthly", monthly, self.monthly_budget), *tenant.limits()]
        warning = any(_over(spent, limit * self.warning_ratio) for _, spent, limit in limits)
        return BudgetStatus(self.daily_budget, self.monthly_budget, daily, monthly, tenant, warning)

    def check(self, estimated_cost: float = 0.0) -> BudgetStatus:
        """Raises RESOURCE_EXHAUSTED when the spend so far plus ``estimated_cost`` exceeds the mesh's budget
        or the caller tenant's."""
        status = self.budget()
        self._check_mesh(status, estimated_cost)
        self._check_tenant(status.tenant, estimated_cost)
        return status

    def _check_mesh(self, status: BudgetStatus, estimated_cost: float) -> None:
        for name, spent, limit in (
            ("daily", status.daily_spent, status.daily_budget),
            ("monthly", status.monthly_spent, status.monthly_budget),
        ):
            if spent + estimated_cost > limit:
                raise ResourceExhausted(
                    f"{name} LLM budget of ${limit:.6g} exhausted: spent ${spent:.6g},"
                    f" this request needs about ${estimated_cost:.6g}",
                    reason="BUDGET_EXCEEDED",
                    metadata={
                        "budget": name,
                        "limit_usd": f"{limit:.6g}",
                        "spent_usd": f"{spent:.6g}",
                        "estimated_usd": f"{estimated_cost:.6g}",
                    },
                )

    def _check_tenant(self, tenant: TenantBudget, estimated_cost: float) -> None:
        for name, spent, limit in tenant.limits():
            if spent + estimated_cost > limit:
                raise ResourceExhausted(
                    f"tenant {tenant.tenant!r} exhausted its {name} LLM budget of ${limit:.6g}: spent ${spent:.6g},"
                    f" this request needs about ${estimated_cost:.6g}",
                    reason="TENANT_BUDGET_EXCEEDED",
                    metadata={
                        "tenant": tenant.tenant,
                        "budget": name,
                        "limit_usd": f"{limit:.6g}",
                        "spent_usd": f"{spent:.6g}",
                        "estimated_usd": f"{estimated_cost:.6g}",
                    },
                )

    def report(self, period: str = "today", scope: str | None = None) -> CostReport:
        """Spend in ``period``: mesh-wide when ``scope`` is None (an admin's view), else only tenant ``scope``'s,
        with the mesh's own spend left 0 (a user sees its tenant alone; the mesh's budgets are still shown)."""
        period = period or "today"
        if period not in PERIODS:
            raise InvalidArgument(
                f"unknown period {period!r}; expected one of {', '.join(PERIODS)}", reason="BAD_PERIOD"
            )
        now = self._clock()
        since = {"today": _day_start(now), "week": now - 7 * 86_400, "month": _month_start(now)}[period]
        by_provider = self._grouped("provider", since, scope)
        by_intent = self._grouped("intent", since, scope)
        budget = self.budget()
        if scope is not None:
            budget = dataclasses.replace(budget, daily_spent=0.0, monthly_spent=0.0)
        return CostReport(
            period=period,
            by_provider=by_provider,
            by_intent=by_intent,
            total_cost=sum(b.cost for b in by_provider.values()),
            total_requests=sum(b.requests for b in by_provider.values()),
            budget=budget,
            tenant_total=self._tenant_total(_caller_tenant(), since),
        )

    def _tenant_budget(self, tenant: str, now: float) -> TenantBudget:
        return TenantBudget(
            tenant=tenant,
            daily_budget=self.tenant_daily_budget,
            monthly_budget=self.tenant_monthly_budget,
            daily_spent=self._tenant_total(tenant, _day_start(now)).cost,
            monthly_spent=self._tenant_total(tenant, _month_start(now)).cost,
        )

    def _tenant_total(self, tenant: str, since: float) -> Bucket:
        row = self._db.one(
            "SELECT COALESCE(SUM(cost_usd), 0) AS cost, COUNT(*) AS n FROM cost_records WHERE tenant = ? AND ts >= ?",
            (tenant, since),
        )
        return Bucket(float(row["cost"]), int(row["n"])) if row else Bucket()

    def _grouped(self, column: str, since: float, tenant: str | None = None) -> dict[str, Bucket]:
        only_tenant = "" if tenant is None else " AND tenant = ?"
        rows = self._db.query(
            f"SELECT {column} AS k, SUM(cost_usd) AS cost, COUNT(*) AS n FROM cost_records"
            f" WHERE ts >= ?{only_tenant} GROUP BY k",
            (since,) if tenant is None else (since, tenant),
        )
        return {row["k"]: Bucket(float(row["cost"] or 0.0), int(row["n"])) for row in rows}

    def _spent_since(self, since: float) -> float:
        row = self._db.one("SELECT COALESCE(SUM(cost_usd), 0) AS s FROM cost_records WHERE ts >= ?", (since,))
        return float(row["s"]) if row else 0.0


def _caller_tenant() -> str:
    ctx = request_context.current()
    return ctx.tenant if ctx else ""


def _over(spent: float, threshold: float) -> bool:
    return threshold > 0 and spent >= threshold


def _day_start(now: float) -> float:
    day = dt.datetime.fromtimestamp(now, dt.UTC).date()
    return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()


def _month_start(now: float) -> float:
    day = dt.datetime.fromtimestamp(now, dt.UTC)
    return dt.datetime(day.year, day.month, 1, tzinfo=dt.UTC).timestamp()
