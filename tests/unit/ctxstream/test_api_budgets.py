"""The HTTP API's budgets, as arithmetic on a fake clock: token buckets, slots, their refusals."""

from __future__ import annotations

import pytest

from ctxstream.api.concurrency_budget import ConcurrencyBudget
from ctxstream.api.errors import ApiError, api_error_of, retry_after_header
from ctxstream.api.rate_budget import RateBudget, TokenBucket
from ctxstream.api.settings import ServeSettings
from ctxstream.api.tenant_budgets import TenantBudgets
from ctxstream.errors import OverBudgetError
from schemas.read_protocol import HistoryStart


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _rate(clock: FakeClock, *, rate_per_s: float = 10.0, burst: float = 5.0) -> RateBudget:
    return RateBudget("widgets", "HTTP_WIDGETS", rate_per_s=rate_per_s, burst=burst, clock=clock)


def test_a_bucket_refills_at_its_rate_up_to_its_burst() -> None:
    bucket = TokenBucket(rate_per_s=2.0, burst=4.0, tokens=0.0, stamp=0.0)
    assert bucket.wait_s(1, now=0.0) == 0.5
    assert bucket.wait_s(1, now=0.5) == 0.0
    assert bucket.wait_s(4, now=100.0) == 0.0  # full, never beyond the burst
    bucket.take(4)
    assert bucket.wait_s(4, now=100.0) == 2.0


def test_a_rate_budget_takes_a_burst_then_refuses_with_the_wait() -> None:
    clock = FakeClock()
    budget = _rate(clock)
    budget.take("acme", 5)
    with pytest.raises(OverBudgetError) as refused:
        budget.take("acme", 3)
    assert refused.value.retry_after_s == pytest.approx(0.3)
    assert "'acme'" in refused.value.reason
    assert "widgets" in refused.value.reason
    assert "HTTP_WIDGETS" in refused.value.reason
    clock.now += 0.31
    budget.take("acme", 3)  # what came back meanwhile


def test_a_refused_take_spends_nothing_and_leaves_the_other_tenants_theirs() -> None:
    clock = FakeClock()
    budget = _rate(clock)
    budget.take("acme", 4)
    with pytest.raises(OverBudgetError):
        budget.take("acme", 2)
    budget.take("acme", 1)
    budget.take("globex", 5)


def test_a_clock_going_back_adds_nothing() -> None:
    clock = FakeClock()
    budget = _rate(clock)
    budget.take("acme", 5)
    clock.now -= 50
    assert budget.wait_s("acme", 1) == pytest.approx(0.1)


def test_retry_after_is_whole_seconds_at_least_one() -> None:
    assert retry_after_header(0.01) == 1
    assert retry_after_header(1.0) == 1
    assert retry_after_header(1.2) == 2
    answer = api_error_of(OverBudgetError(2.5, "over")).response()
    assert answer.status_code == 429
    assert answer.headers["Retry-After"] == "3"


def test_slots_per_tenant_and_per_server() -> None:
    budget = ConcurrencyBudget(
        "reads", tenant_limit=2, server_limit=3, tenant_setting="T", server_setting="S"
    )
    first, _ = budget.acquire("acme"), budget.acquire("acme")
    with pytest.raises(OverBudgetError, match=r"'acme' has 2 reads open, its limit \(T\)"):
        budget.acquire("acme")
    budget.acquire("globex")
    with pytest.raises(OverBudgetError, match=r"the server has 3 reads open, its limit \(S\)"):
        budget.acquire("initech")
    first.release()
    first.release()  # once only
    assert budget.held("acme") == 1
    assert budget.total == 2
    with budget.holding("initech"):
        assert budget.total == 3
    assert budget.total == 2


def test_a_slot_comes_back_when_its_block_raises() -> None:
    budget = ConcurrencyBudget(
        "reads", tenant_limit=1, server_limit=1, tenant_setting="T", server_setting="S"
    )
    with pytest.raises(RuntimeError), budget.holding("acme"):
        raise RuntimeError("the read failed")
    assert budget.total == 0


def _budgets(clock: FakeClock, **settings: object) -> TenantBudgets:
    return TenantBudgets(ServeSettings.model_validate(settings), clock)


def test_the_default_budgets() -> None:
    defaults = ServeSettings()
    assert defaults.http_tenant_max_reads == 8
    assert defaults.http_max_reads == 64
    assert defaults.http_tenant_max_subscriptions == 4
    assert defaults.http_max_subscriptions == 64
    assert defaults.http_max_batch_events == 1_000
    assert defaults.http_max_batch_bytes == 4 * 1024 * 1024
    assert defaults.http_tenant_append_events_per_s == 2_000
    assert defaults.http_tenant_append_bytes_per_s == 8 * 1024 * 1024
    assert defaults.http_tenant_forks_per_minute == 10


def test_a_batch_over_its_events_is_too_large() -> None:
    budgets = _budgets(FakeClock(), http_max_batch_events=10)
    budgets.check_batch(10)
    with pytest.raises(ApiError) as refused:
        budgets.check_batch(11)
    assert refused.value.code == "too-large"
    assert "HTTP_MAX_BATCH_EVENTS" in refused.value.reason


def test_appends_spend_events_and_bytes_together_or_neither() -> None:
    clock = FakeClock()
    budgets = _budgets(
        clock,
        http_max_batch_events=100,
        http_max_batch_bytes=1_000_000,
        http_tenant_append_events_per_s=100,
        http_tenant_append_bytes_per_s=1_000_000,
    )
    budgets.spend_append("acme", 10, 1_000_000)  # every byte of the burst
    with pytest.raises(OverBudgetError, match="HTTP_TENANT_APPEND_BYTES_PER_S") as refused:
        budgets.spend_append("acme", 90, 500_000)
    assert refused.value.retry_after_s == pytest.approx(0.5)
    clock.now += 0.51
    budgets.spend_append("acme", 90, 500_000)  # the 90 events were not spent by the refusal
    with pytest.raises(OverBudgetError, match="HTTP_TENANT_APPEND_EVENTS_PER_S"):
        budgets.spend_append("acme", 11, 1)  # 10 events left


def test_forks_per_minute() -> None:
    clock = FakeClock()
    budgets = _budgets(clock, http_tenant_forks_per_minute=2)
    budgets.spend_fork("acme")
    budgets.spend_fork("acme")
    with pytest.raises(OverBudgetError, match="HTTP_TENANT_FORKS_PER_MINUTE") as refused:
        budgets.spend_fork("acme")
    assert refused.value.retry_after_s == pytest.approx(30)
    budgets.spend_fork("globex")
    clock.now += 30.1
    budgets.spend_fork("acme")


def test_a_charge_past_the_bucket_is_debt_that_holds_the_next_call_until_paid() -> None:
    clock = FakeClock()
    budget = _rate(clock, rate_per_s=10.0, burst=5.0)
    budget.admit("evil")
    budget.charge("evil", 25.0)  # an answer far larger than the burst: 20 tokens of debt
    with pytest.raises(OverBudgetError) as refused:
        budget.admit("evil")
    assert refused.value.retry_after_s == pytest.approx(2.1)  # 21 tokens at 10/s
    budget.admit("acme")  # another tenant owes nothing
    clock.now += 2.2
    budget.admit("evil")  # paid back


def test_heavy_reads_are_charged_their_answers_bytes_and_at_least_the_minimum() -> None:
    clock = FakeClock()
    settings = ServeSettings(http_tenant_heavy_read_bytes_per_s=64 * 1024)
    budgets = TenantBudgets(settings, clock)
    for _ in range(16):  # the burst: 16 s of the rate, each read costing the minimum
        budgets.admit_heavy_read("evil")
        budgets.charge_heavy_read("evil", 10)
    with pytest.raises(OverBudgetError, match="HTTP_TENANT_HEAVY_READ_BYTES_PER_S"):
        budgets.admit_heavy_read("evil")
    clock.now += 1.0
    budgets.admit_heavy_read("evil")
    budgets.charge_heavy_read("evil", 10 * 64 * 1024)  # a long answer: ten seconds of rate
    clock.now += 9.0
    with pytest.raises(OverBudgetError):
        budgets.admit_heavy_read("evil")
    clock.now += 1.0
    budgets.admit_heavy_read("evil")


def test_forks_are_charged_the_source_records_they_read() -> None:
    clock = FakeClock()
    settings = ServeSettings(http_tenant_fork_records_per_s=100, http_tenant_forks_per_minute=60)
    budgets = TenantBudgets(settings, clock)
    source = HistoryStart(session_key="evil/a/u/s", first_offset=1_000, last_offset=5_000)
    budgets.spend_fork("evil")
    budgets.charge_fork("evil", source, at_offset=4_999)  # 4,000 records: 2,400 of debt
    with pytest.raises(OverBudgetError, match="HTTP_TENANT_FORK_RECORDS_PER_S") as refused:
        budgets.spend_fork("evil")
    assert refused.value.retry_after_s == pytest.approx(24.01)
    budgets.spend_fork("acme")  # another tenant's forks are its own
    clock.now += 24.1
    budgets.spend_fork("evil")
    unknown = HistoryStart(session_key="evil/a/u/s", first_offset=-1, last_offset=9)
    budgets.charge_fork("evil", unknown, at_offset=9)  # from the log start: 10 records
    with pytest.raises(OverBudgetError) as refused:  # the 10 left are spent: 1 more to come
        budgets.spend_fork("evil")
    assert refused.value.retry_after_s == pytest.approx(0.01, abs=0.005)
