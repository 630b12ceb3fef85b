"""The composition root: command-line options in, a wired AgentSession out.

The only place that picks concrete adapters (the model, the session file, the extensions on disk);
what it builds is handed to the agent, the terminal and print mode as parameters.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from pi_compact.cancel import CancelToken
from pi_compact.clock import now_ms
from pi_compact.errors import ConfigError, PiCompactError, UsageError
from pi_compact.llm.protocol import ChatModel, ChatRequest, ModelInfo, StreamEvent
from pi_compact.options import AppOptions
from pi_compact.paths import agent_dir, find_most_recent_session, new_session_file, new_session_id, resolve_session_dir
from pi_compact.settings import Settings

if TYPE_CHECKING:  # the agent stack is imported where it is used: the interactive prompt must not wait for it
    from pi_compact.agent.events import SessionEvent
    from pi_compact.agent.session import AgentSession
    from pi_compact.agent.tools import Tool
    from pi_compact.session.store import SessionStore


class LazyModel(ChatModel):
    """A ChatModel resolved on first use, so the prompt can appear before litellm finishes importing."""

    def __init__(self, resolve: Callable[[], ChatModel]) -> None:
        self._resolve = resolve
        self._model: ChatModel | None = None
        self._lock = threading.Lock()
        self.failure: str | None = None  # why resolving failed (an unknown window...), once it did

    def get(self) -> ChatModel:
        with self._lock:
            if self._model is None:
                try:
                    self._model = self._resolve()
                except PiCompactError as error:
                    self.failure = str(error)
                    raise
                self.failure = None
            return self._model

    @property
    def ready(self) -> bool:
        return self._model is not None

    @property
    def info(self) -> ModelInfo:
        return self.get().info

    @property
    def progress(self) -> str | None:
        """What a model that starts in the background (the local one) is doing, while it does."""
        return self._model.progress if self._model is not None else None

    def wait_ready(self, cancel: CancelToken | None = None) -> bool:
        """Resolve the model and wait until it can answer; False when ``cancel`` fired first."""
        return self.get().wait_ready(cancel)

    def preload(self) -> None:
        self.get().preload()

    @property
    def prefix_by_default(self) -> bool:
        return self.get().prefix_by_default

    @property
    def reading_rate(self) -> float | None:
        return self._model.reading_rate if self._model is not None else None

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        return self.get().stream(request, cancel)


def flag_window(options: AppOptions, model: str | None) -> int | None:
    """``--context-window`` for ``model`` (None: the start model).

    The flag belongs to the model the run started with, so a ``/model`` switch to another model uses
    that model's window and a switch back gets the flag's window again. With no start model configured
    it applies to whichever is chosen.
    """
    if options.context_window is None or model is None or options.model is None:
        return options.context_window
    return options.context_window if model == options.model else None


def model_factory(
    options: AppOptions, settings: Settings, model: str | None = None, report: Callable[[str], None] | None = None,
) -> Callable[[], ChatModel]:
    """A function that resolves and builds the model (imports litellm when it runs); it learns the
    model's real window from overflow errors (``llm.learned``), telling ``report``."""

    def resolve() -> ChatModel:
        from pi_compact.llm.learned import LearningModel
        from pi_compact.llm.resolve import create_model, resolve_model

        info = resolve_model(model or options.model, api_base=options.api_base, api_key=options.api_key,
                             context_window=flag_window(options, model), settings=settings)
        built = create_model(info, api_base=options.api_base, api_key=options.api_key, settings=settings,
                             report=report)
        if info.model == "local":  # the embedded model's window is exact: nothing to learn
            if not (model or options.model):  # options.model holds defaultModel too (cli.choices)
                say_default_once(report)
            return built
        return LearningModel(built, report)

    return resolve


def summarizer_factory(
    options: AppOptions, report: Callable[[str], None] | None = None,
) -> Callable[[str, Settings], ChatModel]:
    """How a session builds its compaction model (``compaction.model``) by name: resolved like any model
    (no ``--context-window``: that is the chat model's), at the endpoint ``compaction_endpoint`` picks."""

    def make(name: str, settings: Settings) -> ChatModel:
        from pi_compact.llm.learned import LearningModel
        from pi_compact.llm.resolve import compaction_endpoint, create_model, resolve_model
        from pi_compact.paths import settings_path_hint

        base, key = compaction_endpoint(name, options.model, api_base=options.api_base, api_key=options.api_key,
                                        settings=settings)
        try:
            info = resolve_model(name, settings=settings)
        except ConfigError as error:
            if "context window" not in str(error):
                raise
            # The resolver's advice names --context-window, which sizes the chat model, not this one.
            raise ConfigError(f"The context window of model {name} is unknown: set models.{name}.contextWindow "
                              f"in {settings_path_hint()} (compaction.model names it).") from error
        return LearningModel(create_model(info, api_base=base, api_key=key, settings=settings), report)

    return make


_said_default = threading.Event()


def say_default_once(report: Callable[[str], None] | None) -> None:
    """Tell, once per run, that no model was configured and the embedded local model is used."""
    if report is not None and not _said_default.is_set():
        report(_claim_default_notice())


def _claim_default_notice() -> str:
    """The embedded model's notice, marked as said for the rest of the run."""
    from pi_compact.llm.local.model import DEFAULT_NOTICE

    _said_default.set()
    return DEFAULT_NOTICE


def existing_session(options: AppOptions, settings: Settings) -> Path | None:
    """The session file the run continues: ``--session FILE``, else with ``-c`` the newest here (None: a new one)."""
    if options.no_session:
        return None
    if options.session is not None:
        return options.session
    if not options.continue_recent:
        return None
    return find_most_recent_session(resolve_session_dir(options.cwd, flag=options.session_dir,
                                                        setting=settings.session_dir))


def open_store(
    options: AppOptions, settings: Settings, report: Callable[[str], None] | None = None
) -> SessionStore:
    """The session to use: --no-session, --session FILE, -c (most recent), or a new file.

    ``report`` hears why ``-c`` started a new session (there was none to continue)."""
    from pi_compact.session.store import SessionStore

    cwd = str(options.cwd)
    if options.no_session:
        return SessionStore.in_memory(cwd, now_ms())
    # A live session keeps its file locked until it ends: another writer (`compact FILE`, a second
    # REPL) is refused instead of appending to it behind this session's back.
    existing = existing_session(options, settings)
    if existing is not None:
        return SessionStore.open(existing, cwd, now_ms(), hold=True)
    directory = resolve_session_dir(options.cwd, flag=options.session_dir, setting=settings.session_dir)
    if options.continue_recent and report is not None:
        report(f"No session to continue in {directory}; starting a new one.")
    now = datetime.now(timezone.utc)
    session_id = new_session_id(now)
    path = new_session_file(options.cwd, now, session_id=session_id, directory=directory)
    return SessionStore.create(path, cwd, now_ms(), session_id=session_id, hold=True)


def project_instructions(cwd: Path, report: Callable[[str], None]) -> str | None:
    """AGENTS.md from the project root (the cwd), if present: it goes to the provider in the system prompt,
    so only a regular file inside the project is read (never a link to ``/proc/self/environ``, a key
    file, a device or a pipe), up to a size cap; bytes that are not UTF-8 are replaced. Each problem is
    one line through ``report``."""
    from pi_compact.project_files import decode, read_file

    candidate = cwd / "AGENTS.md"
    outcome = read_file(candidate, inside=(cwd,))
    if outcome.data is None:
        if outcome.reason:
            report(f"Not reading {candidate}: {outcome.reason}.")
        return None
    text, problem = decode(outcome.data, candidate)
    if problem:
        report(problem)
    return text


@dataclass(frozen=True)
class Runtime:
    """A built session with its store and model (tests read the three; the CLI hands on the session)."""

    session: AgentSession
    store: SessionStore
    model: ChatModel


def system_prompt_for(cwd: Path, tools: Sequence[Tool], report: Callable[[str], None]) -> str:
    """The system prompt a session in ``cwd`` sends: who the agent is, its tools, the project's AGENTS.md."""
    from pi_compact.agent.system_prompt import build_system_prompt

    return build_system_prompt(str(cwd), date.today(), [t.name for t in tools], project_instructions(cwd, report))


def build_runtime(
    options: AppOptions, settings: Settings, emit: Callable[[SessionEvent], None], model: ChatModel | None = None,
    store: SessionStore | None = None,
) -> Runtime:
    """Wire settings, session file (or ``store``, a session not written yet), model, tools and
    extensions into an AgentSession."""
    from pi_compact.agent.events import Notice
    from pi_compact.agent.extensions import ExtensionHooks, discover, load_extensions
    from pi_compact.agent.session import AgentSession
    from pi_compact.settings.trust import extension_files

    def report(text: str) -> None:
        emit(Notice(text, "warning"))

    if store is None:
        store = open_store(options, settings, lambda text: emit(Notice(text, "info")))
    chat_model: ChatModel = model or LazyModel(
        model_factory(options, settings, report=lambda text: emit(Notice(text, "info"))))
    from pi_compact.agent.tools import session_tools

    tools = session_tools(store, settings)
    extension_paths = discover(agent_dir(), options.cwd, options.extensions)
    # A project's .pi/extensions/ file loads only as trusted (settings.trust): its name and the SHA-256 of
    # its content; one added since the question stays out, one changed is refused by load_extensions.
    trusted = dict(settings.project_extensions)
    project = set(extension_files(options.cwd)) - set(options.extensions)
    for path in sorted(p for p in project if p.name not in trusted and settings.project_extensions):
        report(f"Extension {path} was added since you trusted this project; it is skipped. Start again to be "
               "asked about it.")
    extension_paths = [p for p in extension_paths if p not in project or p.name in trusted]
    expected = {p: trusted[p.name] for p in project if p.name in trusted}

    for path in options.extensions:
        if not Path(path).is_file():
            raise UsageError(f"Extension file {path} does not exist.")
    hooks = ExtensionHooks(load_extensions(extension_paths, report, expected), report) if extension_paths else None
    prompt = system_prompt_for(options.cwd, tools, report)
    session = AgentSession(store=store, model=chat_model, settings=settings, tools=tools, system_prompt=prompt,
                           cwd=options.cwd, emit=emit, hooks=hooks, auto_compact=options.auto_compact,
                           make_summarizer=summarizer_factory(options, lambda text: emit(Notice(text, "info"))),
                           thinking=options.thinking)
    return Runtime(session, store, chat_model)


@dataclass(frozen=True)
class AppRuntimes:
    """Sessions and models for one run's ``options``: the terminal's ``ui.state.Runtimes``."""

    options: AppOptions

    def refuse_a_held_session(self, settings: Settings) -> None:
        """Before the terminal's prompt: the session itself is built after the prompt is up, and a refusal
        then would lose what was typed."""
        from pi_compact.session.lock import refuse_if_held

        existing = existing_session(self.options, settings)
        if existing is not None:
            refuse_if_held(existing)

    def model_name(self, settings: Settings) -> str:
        if self.options.model:
            return self.options.model
        from pi_compact.llm.resolve import model_string

        return model_string(None, settings)  # nothing configured: the embedded model, or why there is none

    def start_notice(self, settings: Settings) -> str | None:
        """The embedded model's notice when nothing else is configured, said before the first prompt (once
        per run): said when the model resolves instead, it landed between a question typed at once and
        its answer."""
        if self.options.model:  # (it holds defaultModel too)
            return None
        from pi_compact.llm.local.model import LOCAL_MODEL

        try:
            chosen = self.model_name(settings)
        except ConfigError:
            return None  # no model at all: the terminal says so instead
        return _claim_default_notice() if chosen == LOCAL_MODEL and not _said_default.is_set() else None

    def build(
        self, settings: Settings, emit: Callable[[SessionEvent], None], *, model: ChatModel | None = None,
        fresh: bool = False, path: Path | None = None, store: SessionStore | None = None,
    ) -> AgentSession:
        options = replace(self.options, session=None, continue_recent=False) if fresh else self.options
        if path is not None:
            options = replace(options, session=path, continue_recent=False, no_session=False)
        return build_runtime(options, settings, emit, model, store).session

    def make_model(self, name: str, settings: Settings) -> ChatModel:
        return model_factory(self.options, settings, name)()

    def warm_up(self, model: ChatModel) -> ModelInfo | None:
        model.preload()  # resolves a lazy model first; litellm's import only for a model served by it
        return model.info if isinstance(model, LazyModel) else None


def run_print_mode(
    options: AppOptions, settings: Settings, model: ChatModel | None = None, sources: Mapping[str, str] | None = None,
) -> int:
    """``-p PROMPT``: build the session for print mode's output and hand it over; returns the exit code."""
    from pi_compact.ui.print_mode import PrintMode

    settings = PrintMode.settings_for(settings)
    printer = PrintMode(as_json=options.mode == "json")
    runtime = build_runtime(options, settings, printer.emit, model)
    return printer.run(runtime.session, options.prompt or "", approve=options.approve or settings.approve,
                       sources=sources)
