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

PERFORMANCE = Work(
    name="performance fix",
    tasks=("Profile {area}; it shows up at the top of the CPU profile.", "Cut the allocations in {area}.",
           "Add a benchmark for {area} before we change it.", "Check whether {area} holds the lock too long.",
           "Compare {area} before and after with benchstat.", "Remove the extra copy in {area}.",
           "Make {area} reuse its buffers.", "Check {area} under the race detector after the change."),
    areas=("the lease table", "the shard map", "the renew loop", "the expiry heap", "the gRPC handler",
           "the metrics exporter", "the config watcher"),
    decisions=(("the buffer pool", "use a sync.Pool for the renew buffers instead of a global free list, "
                "because the free list needed its own lock and became the new hot spot",
                r"(?=[\s\S]*sync\.?pool)(?=[\s\S]*(free list|own lock|hot ?spot))"),
               ("the shard lookup", "keep the map lookup instead of a sorted slice with binary search, because the "
                "slice only won below 64 shards and prod runs 512", r"(?=[\s\S]*binary search)(?=[\s\S]*512)")),
    next_steps=(("run the load test on the canary pool overnight", r"load test[^\n]{0,60}(overnight|canary)"),
                ("turn the benchmark into a CI regression gate", r"regression gate|CI gate")),
    shell_changes=(("go test -run '^$' -bench . -benchmem ./internal/lease > bench/lease-before.txt",
                    "bench/lease-before.txt"),
                   ("sed -i 's/^GOGC=.*/GOGC=200/' deploy/leasekeeper.env", "deploy/leasekeeper.env")),
)

DEPENDENCY_UPGRADE = Work(
    name="dependency upgrade",
    tasks=("Upgrade the validation library used by {area}.", "Fix the type errors the upgrade caused in {area}.",
           "Check the changelog for breaking changes that touch {area}.", "Remove the old shim from {area}.",
           "Make {area} build on Node 22.", "Replace the deprecated calls in {area}.",
           "Pin the versions {area} depends on.", "Run {area}'s tests against the new version."),
    areas=("the webhook dispatcher", "the invoice renderer", "the plan resolver", "the usage meter",
           "the retry queue", "the tenant settings store", "the signing helper"),
    decisions=(("the upgrade path", "upgrade in two steps, first to the last 3.x and then to 4.0, because the "
                "codemod only handles 3.x sources", r"(?=[\s\S]*(two steps|3\.x))(?=[\s\S]*codemod)"),
               ("the lockfile", "regenerate the lockfile from scratch instead of patching it, because the old one "
                "pinned a yanked transitive version", r"(?=[\s\S]*lockfile)(?=[\s\S]*yank)")),
    next_steps=(("remove the compatibility shim after one release", r"shim"),
                ("enable the renovate bot for minor updates", r"renovate")),
    shell_changes=(("git rm src/billing/legacySchema.ts", "src/billing/legacySchema.ts"),
                   ("cp .nvmrc.example .nvmrc", ".nvmrc")),
)

SECURITY_FIX = Work(
    name="security fix",
    tasks=("Audit {area} for places that trust the client.", "Reject unsigned tokens in {area}.",
           "Stop {area} from logging secrets.", "Add a regression test for the bypass in {area}.",
           "Check {area} for the same injection.", "Tighten the allowed hosts of {area}.",
           "Rotate the keys {area} uses, without downtime.", "Review the error messages of {area} for leaks."),
    areas=("the token verifier", "the session cookies", "the admin API", "the password reset flow",
           "the webhook signatures", "the request logger", "the CORS middleware"),
    decisions=(("token checks", "verify tokens with an allow-list of algorithms instead of trusting the header, "
                "because the header let a caller pick none", r"(?=[\s\S]*allow[- ]?list)(?=[\s\S]*(header|none))"),
               ("secrets in logs", "redact in the log formatter instead of at each call site, because call sites "
                "were missed twice", r"(?=[\s\S]*formatter)(?=[\s\S]*(call sites?|missed))")),
    next_steps=(("ask security to re-run the pentest on staging", r"pen ?test"),
                ("rotate the production signing keys on Monday", r"rotat[^\n]{0,60}(production|prod)[^\n]{0,40}key")),
    shell_changes=(("echo 'ALLOWED_HOSTS = [\"api.internal\"]' >> config/security.toml", "config/security.toml"),
                   ("cp config/settings.example.toml config/settings.prod.toml", "config/settings.prod.toml")),
)

WORKS = {w.name: w for w in (BUG_HUNT, REFACTOR, CONFIG_DEPLOY, DATA_MIGRATION, DOCS, PERFORMANCE,
                             DEPENDENCY_UPGRADE, SECURITY_FIX)}
