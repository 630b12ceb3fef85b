// The reference operation for bench_dry_run.py, done by pi 0.73.1 itself (Node): open a session file,
// take the current branch, build the model's context, estimate its tokens, plan a compaction,
// serialize the history for the summarizer and print the result as one JSON object. It mirrors what
// `pi-compact compact FILE --dry-run --json` does, so the two whole-process times compare like for like.
//
// Usage: node benchmarks/pi_dry_run.mjs SESSION.jsonl [KEEP_RECENT] [RESERVE] [WINDOW]
// Needs `npm install --no-save @mariozechner/pi-coding-agent@0.73.1` in the project root. pi rewrites
// a legacy (v1/v2) file on open, so pass a copy of such files (bench_dry_run.py does).

const dist = new URL("../node_modules/@mariozechner/pi-coding-agent/dist/", import.meta.url);
const load = (path) => import(new URL(path, dist).href);

const { SessionManager } = await load("core/session-manager.js");
const { estimateContextTokens, prepareCompaction, shouldCompact } = await load("core/compaction/compaction.js");
const { computeFileLists, serializeConversation } = await load("core/compaction/utils.js");
const { convertToLlm } = await load("core/messages.js");

const [file, keep = "20000", reserve = "16384", window = "200000"] = process.argv.slice(2);
const settings = { enabled: true, keepRecentTokens: Number(keep), reserveTokens: Number(reserve) };

const session = SessionManager.open(file);
const branch = session.getBranch();
const messages = session.buildSessionContext().messages;
const tokens = estimateContextTokens(messages).tokens;
const plan = prepareCompaction(branch, settings);
let planOut = null;
if (plan) {
    const { readFiles, modifiedFiles } = computeFileLists(plan.fileOps);
    planOut = {
        first_kept_entry_id: plan.firstKeptEntryId,
        is_split_turn: plan.isSplitTurn,
        tokens_before: plan.tokensBefore,
        previous_summary: plan.previousSummary ?? null,
        read_files: readFiles,
        modified_files: modifiedFiles,
        serialized_history: serializeConversation(convertToLlm(plan.messagesToSummarize)),
        serialized_turn_prefix: serializeConversation(convertToLlm(plan.turnPrefixMessages)),
    };
}
const report = {
    context_tokens: tokens,
    should_compact: shouldCompact(tokens, Number(window), settings),
    context_roles: messages.map((m) => m.role),
    plan: planOut,
};
process.stdout.write(JSON.stringify(report) + "\n");
