"""Kinds of work of the wide transcripts (issue 33): a bug hunt, a refactor, a config/deploy change,
a data migration, a docs task.

A ``Work`` supplies what the user asks for, the areas it touches, the decisions and next steps that
fit it, and the shell commands that change a file without the edit tool (``sed -i``, a redirect,
``tee``, ``mv``...). Each decision names its topic (the probe asks about it) and comes with a regex
that needs the decision and its reason. ``{area}`` in a task is filled per turn.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Work:
    name: str
    tasks: tuple[str, ...]
    areas: tuple[str, ...]
    decisions: tuple[tuple[str, str, str], ...]  # (topic, decision with reason, regex)
    next_steps: tuple[tuple[str, str], ...]  # (step, regex)
    shell_changes: tuple[tuple[str, str], ...]  # (command, the path it writes)


BUG_HUNT = Work(
    name="bug hunt",
    tasks=("Events from {area} arrive twice after a restart. Find out why.",
           "Reproduce the crash in {area} with a test first.", "Bisect where {area} started dropping rows.",
           "Add logging around {area} so we can see the offsets.", "Check whether {area} has the same bug.",
           "Explain what {area} does with late events.", "Tighten the bounds checks in {area}.",
           "Write a regression test for {area}."),
    areas=("the offset tracker", "the dedup window", "the batch writer", "the partition reader",
           "the schema cache", "the retry backoff", "the late-event buffer"),
    decisions=(("deduplication", "deduplicate by offset instead of by payload hash, because two different "
                "events can share a payload", r"(?=[\s\S]*offset)(?=[\s\S]*(payload|hash))"),
               ("the window arithmetic", "use saturating subtraction instead of checked arithmetic, because "
                "a clamped window is harmless and a panic drops the batch",
                r"(?=[\s\S]*saturat)(?=[\s\S]*(panic|drop))")),
    next_steps=(("replay last week's dead-letter queue through the fixed reader", r"dead[- ]letter"),
                ("add a property test for the window bounds", r"property[- ]test|proptest")),
    shell_changes=(("sed -i 's/^grace_ms = .*/grace_ms = 750/' config/ingest.toml", "config/ingest.toml"),
                   ("cargo run --bin gen-fixtures > tests/fixtures/late_events.json",
                    "tests/fixtures/late_events.json")),
)

REFACTOR = Work(
    name="refactor",
    tasks=("Extract the pricing rules out of {area}.", "Make {area} take its repository through the constructor.",
           "Replace the nested ifs in {area} with a when expression.", "Split {area} into smaller classes.",
           "Remove the dead code paths from {area}.", "Rename the confusing parameters in {area}.",
           "Move {area} behind an interface so it can be faked.", "Check {area} for behaviour changes."),
    areas=("the checkout flow", "the coupon engine", "the tax calculator", "the stock reservations",
           "the refund service", "the cart merger", "the shipping quote"),
    decisions=(("the pricing rules", "keep the pricing rules as a sealed class hierarchy instead of a rules "
                "engine, because the rule set is small and the compiler checks the when branches",
                r"(?=[\s\S]*sealed)(?=[\s\S]*(compiler|exhaustive|small|when))"),
               ("dependency injection", "inject the repository by constructor instead of adopting a DI "
                "framework, because startup time matters for the lambda deployment",
                r"(?=[\s\S]*constructor)(?=[\s\S]*(startup|lambda))")),
    next_steps=(("delete the old PricingUtil object once nothing calls it",
                 r"(delete|remov|drop)[^\n]{0,40}PricingUtil|PricingUtil[^\n]{0,60}(delete|remov|drop)"),
                ("run the mutation tests on the pricing package", r"mutation")),
    shell_changes=(("git mv orders/src/main/kotlin/com/acme/orders/Util.kt "
                    "orders/src/main/kotlin/com/acme/orders/PriceRounding.kt",
                    "orders/src/main/kotlin/com/acme/orders/PriceRounding.kt"),
                   ("sed -i 's/PricingUtil.round/PriceRounding.round/g' "
                    "orders/src/main/kotlin/com/acme/orders/Invoice.kt",
                    "orders/src/main/kotlin/com/acme/orders/Invoice.kt")),
)

CONFIG_DEPLOY = Work(
    name="config/deploy change",
    tasks=("Move the settings of {area} into appsettings.json.", "Make {area} read its limits from config.",
           "Check the health endpoint of {area} behind the load balancer.",
           "Add a readiness probe for {area}.", "Why does {area} time out only in staging?",
           "Make {area} fail fast on a missing config value.", "Add the new region to {area}.",
           "Document the config keys of {area}."),
    areas=("the upstream router", "the rate limiter", "the health probes", "the auth middleware",
           "the header rewriting", "the retry policy", "the connection pool"),
    decisions=(("the rollout", "roll out with a canary at 10 percent instead of blue-green, because the "
                "second cluster does not have the capacity for a full copy",
                r"(?=[\s\S]*canary)(?=[\s\S]*(capacity|second cluster))"),
               ("secrets", "read the upstream keys from the vault sidecar instead of environment variables, "
                "because the env vars show up in crash dumps",
                r"(?=[\s\S]*vault)(?=[\s\S]*(crash dump|dump))")),
    next_steps=(("watch the canary's error rate for one day before widening it",
                 r"canary[^\n]{0,40}error rate|error rate[^\n]{0,40}canary"),
                ("add an alert on the readiness probe failures",
                 r"alert[^\n]{0,60}readiness|readiness[^\n]{0,60}alert")),
    shell_changes=(("sed -i 's/^  replicaCount: .*/  replicaCount: 4/' deploy/helm/gateway/values-staging.yaml",
                    "deploy/helm/gateway/values-staging.yaml"),
                   ("kubectl get configmap gateway-routes -o yaml | tee deploy/k8s/gateway-routes.yaml",
                    "deploy/k8s/gateway-routes.yaml")),
)

DATA_MIGRATION = Work(
    name="data migration",
    tasks=("Write the migration that moves {area} to the new table.", "Backfill {area} in batches.",
           "Check the row counts of {area} before and after.", "Make the migration of {area} resumable.",
           "Find out why {area} has duplicate rows.", "Add an index for {area}'s lookups.",
           "Dry-run the migration of {area} on the staging copy.", "Write the rollback for {area}."),
    areas=("the invoice rows", "the tenant ids", "the ledger entries", "the currency codes", "the archived payments",
           "the account links", "the audit trail"),
    decisions=(("the backfill", "backfill in batches of primary-key ranges instead of one big UPDATE, because "
                "one transaction held locks on invoices for minutes",
                r"(?=[\s\S]*(primary[- ]key|key[- ]range))(?=[\s\S]*(held locks|locks? on invoices|for minutes))"),
               ("the old table", "keep the old table read-only for a release instead of dropping it, because "
                "the finance export still reads it", r"(?=[\s\S]*read[- ]only)(?=[\s\S]*(finance|export))")),
    next_steps=(("run the backfill on the production replica during the weekend window", r"weekend"),
                ("drop the old invoices_legacy table after the finance sign-off", r"invoices_legacy")),
    shell_changes=(("pg_dump --schema-only billing > db/schema.sql", "db/schema.sql"),
                   ("mv db/migrations/0041_tenant_ids.sql db/migrations/0043_tenant_ids.sql",
                    "db/migrations/0043_tenant_ids.sql")),
)

DOCS = Work(
    name="docs task",
    tasks=("Document how {area} works, with an example.", "Fix the outdated examples for {area}.",
           "Add YARD comments to {area}.", "Check that the docs of {area} match the code.",
           "Write a how-to for {area}.", "Make the examples of {area} runnable in the doc tests.",
           "Add a troubleshooting section for {area}.", "Link the API reference of {area} from the guide."),
    areas=("the posting rules", "the journal export", "the balance report", "the currency conversion",
           "the statement renderer", "the reconciliation job", "the audit log"),
    decisions=(("the docs format", "write the guides in Markdown instead of AsciiDoc, because the review tool "
                "renders only Markdown", r"(?=[\s\S]*markdown)(?=[\s\S]*(review|render))"),
               ("the examples", "generate the examples from the specs instead of writing them by hand, because "
                "hand-written examples drifted from the code twice", r"(?=[\s\S]*(generat|spec))(?=[\s\S]*drift)")),
    next_steps=(("ask the finance team to review the posting rules guide", r"finance team"),
                ("publish the docs site from CI on every tag",
                 r"publish[^\n]{0,60}(CI|tag)|(CI|tag)[^\n]{0,60}publish")),
    shell_changes=(("mv docs/ledger.md docs/guides/posting-rules.md", "docs/guides/posting-rules.md"),
                   ("bundle exec yard stats --list-undoc > docs/undocumented.txt", "docs/undocumented.txt")),
)

WORKS = {w.name: w for w in (BUG_HUNT, REFACTOR, CONFIG_DEPLOY, DATA_MIGRATION, DOCS)}
