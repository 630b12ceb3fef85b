"""The files a shell command wrote, read from its text (pure).

pi's file lists come from the read/write/edit tools only, so a config changed with ``sed -i`` or a
redirect is missing from ``<modified-files>``. ``written_paths`` recognises the common writing forms:
in-place ``sed -i`` / ``perl -i``, redirects ``>``/``>>`` (not to ``/dev/...``, not ``2>&1``), ``tee``,
``mv``, ``cp``, ``rm``, ``touch``, ``git mv`` / ``git rm`` / ``git restore`` / ``git checkout -- FILE``,
``patch`` and ``git apply`` where the patched file is known (named, or in a heredoc). It errs towards
listing nothing: any command it does not know writes nothing, a line it cannot read (``shell_lex``)
writes nothing, a path with a variable or glob is skipped, and a command on either side of ``||`` is
skipped (it may have failed, or not run). ``cd DIR`` makes the paths after it relative to DIR as written.

A file counts as written only by a command known to have run and succeeded (``succeeded_only``): the
line exited with 0, so its last pipeline succeeded, and so did every pipeline joined to it by ``&&``;
of a pipeline only the last command's status is known. ``false && touch ghost.txt; echo ok`` exits with
0 and writes nothing; ``cd src && sed -i 's/a/b/' x.py`` writes ``src/x.py``.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence

from pi_compact.compaction.kept.calls import finished_calls
from pi_compact.compaction.kept.shell_lex import Simple, Unreadable, simple_commands
from pi_compact.messages import Message

_NOT_A_PATH = re.compile(r"[$*?\[\]{}`]")
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_PREFIXES = frozenset({"sudo", "time", "nohup", "command", "env"})
_UNKNOWN = "\0"  # the directory after ``cd -`` or ``cd $VAR``: relative paths then mean nothing known


def _positional(args: Sequence[str], with_value: str = "", long_with_value: Sequence[str] = ()) -> list[str]:
    """``args`` without options; a short option in ``with_value`` (alone, ``-t DIR``) takes the next word."""
    found: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return found + list(args[index + 1 :])
        if arg.startswith("--"):
            if arg[2:] in long_with_value:
                index += 1
        elif arg.startswith("-") and len(arg) > 1:
            if len(arg) == 2 and arg[1] in with_value:
                index += 1
        else:
            found.append(arg)
        index += 1
    return found


def _option_value(args: Sequence[str], short: str, long: str) -> str | None:
    """The value of ``-X VALUE`` / ``-XVALUE`` / ``--long=VALUE`` / ``--long VALUE``."""
    for index, arg in enumerate(args):
        nxt = args[index + 1] if index + 1 < len(args) else None
        if (short and arg == f"-{short}") or arg == f"--{long}":
            return nxt
        if arg.startswith(f"--{long}="):
            return arg.split("=", 1)[1]
        if short and arg.startswith(f"-{short}") and not arg.startswith("--"):
            return arg[2:]
    return None


def _in_place(args: Sequence[str], code_options: str) -> list[str] | None:
    """The files of an in-place ``sed`` / ``perl`` call (None when not in place): options in clusters,
    ``-i`` with an attached suffix (``-i.bak``) or BSD sed's separate empty one (``-i ''``)."""
    in_place, code_given = False, False
    files: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--in-place" or arg.startswith("--in-place="):
            in_place = True
        elif arg.startswith(("--expression", "--file")):
            code_given = True
            index += "=" not in arg
        elif arg == "--":  # the end of the options: the rest are the script and the files
            files.extend(args[index + 1:])
            break
        elif arg.startswith("--"):  # --quiet, --regexp-extended, --posix...: a switch, never a file
            pass
        elif arg.startswith("-") and len(arg) > 1 and not arg.startswith("--"):
            for position, flag in enumerate(arg[1:], 1):
                if flag == "i":
                    in_place = True
                    if position == len(arg) - 1 and index + 1 < len(args) and args[index + 1] == "":
                        index += 1  # ``sed -i '' ...``
                    break
                if flag in code_options:
                    code_given = True
                    index += position == len(arg) - 1  # the code is the next word
                    break
        else:
            files.append(arg)
        index += 1
    if not in_place:
        return None
    return files if code_given else files[1:]  # without -e the first word is the script


def _sed(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    return _in_place(args, "ef") or []


def _perl(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    return _in_place(args, "eE") or []


def _tee(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    return [a for a in _positional(args, long_with_value=("output-error",)) if a != "-"]


def _moved(args: Sequence[str], keep_sources: bool) -> list[str]:
    """What ``mv``/``cp`` change: the destination(s), and for ``mv`` the sources too."""
    if any(a.startswith("-") and not a.startswith("--") and "t" in a[2:] for a in args):
        return []  # ``cp -rt DIR a``: a target directory inside a cluster of flags is not worth guessing
    directory = _option_value(args, "t", "target-directory")
    names = _positional(args, "tS", ("target-directory", "suffix"))
    if directory is not None:
        sources = names
    elif len(names) >= 2:
        sources, directory = names[:-1], names[-1]
        if len(names) == 2 and not directory.endswith("/") and directory not in (".", ".."):
            # ``mv a b``: b is the new name (or an existing directory: then it is what changed)
            return ([] if keep_sources else [names[0]]) + [names[1]]
    else:
        return []
    if any(_NOT_A_PATH.search(s) for s in sources):
        return []  # ``mv "$f" dir/``: which file lands there is not known
    targets = [posixpath.normpath(posixpath.join(directory, posixpath.basename(s.rstrip("/")))) for s in sources]
    return ([] if keep_sources else list(sources)) + targets


def _mv(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    return _moved(args, keep_sources=False)


def _cp(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    return _moved(args, keep_sources=True)


def _rm(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    return _positional(args)


def _touch(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    return _positional(args, "dtr", ("date", "reference"))


def _patched_files(body: str, strip: int | None) -> list[str]:
    """The files a unified diff changes: its ``+++`` names (``---`` for a deletion), ``strip``
    leading directories removed (None: patch's default, the bare file name)."""
    found: list[str] = []
    old = ""
    for line in body.splitlines():
        if line.startswith("--- "):
            old = line[4:].split("\t")[0].strip()
        elif line.startswith("+++ "):
            name = line[4:].split("\t")[0].strip()
            name = old if name == "/dev/null" else name
            if name and name != "/dev/null":
                parts = name.split("/")
                found.append(parts[-1] if strip is None else "/".join(parts[strip:]))
    return [f for f in found if f]


def _strip(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _patch(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    if "--dry-run" in args:
        return []
    output = _option_value(args, "o", "output")
    if output is not None:
        return [output]
    names = _positional(args, "iodDFBrVzYgp", ("input", "output", "directory", "strip"))
    strip = _strip(_option_value(args, "p", "strip"))
    files = names[:1] or [f for body in heredocs for f in _patched_files(body, strip)]
    directory = _option_value(args, "d", "directory")
    return [posixpath.join(directory, f) for f in files] if directory else files


def _git_apply(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    if any(a in ("--check", "--stat", "--numstat", "--summary", "--cached") for a in args):
        return []
    strip = _strip(_option_value(args, "p", "p"))
    files = [f for body in heredocs for f in _patched_files(body, 1 if strip is None else strip)]
    directory = _option_value(args, "", "directory")
    return [posixpath.join(directory, f) for f in files] if directory else files


def _git_rm(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    if any(a in ("--cached", "-n", "--dry-run") for a in args):
        return []  # the index only, or nothing
    return _positional(args)


def _git_restore(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    if any(a in ("--staged", "-S") for a in args) and not any(a in ("--worktree", "-W") for a in args):
        return []
    return _positional(args, "s", ("source",))


def _git_checkout(args: Sequence[str], heredocs: Sequence[str]) -> list[str]:
    # Only with ``--``: ``git checkout NAME`` may be a branch.
    return list(args[args.index("--") + 1 :]) if "--" in args else []


Recogniser = Callable[[Sequence[str], Sequence[str]], list[str]]
_COMMANDS: dict[str, Recogniser] = {
    "sed": _sed, "gsed": _sed, "perl": _perl, "tee": _tee, "mv": _mv, "cp": _cp, "rm": _rm, "touch": _touch,
    "patch": _patch,
}
_GIT: dict[str, Recogniser] = {
    "mv": _mv, "rm": _git_rm, "apply": _git_apply, "restore": _git_restore, "checkout": _git_checkout,
}


def _command_paths(simple: Simple) -> tuple[list[str], str | None]:
    """The paths ``simple`` writes by its own arguments, and the directory they are relative to when
    that is not the shell's (``git -C DIR``)."""
    words = list(simple.words)
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in _PREFIXES):
        words.pop(0)
    if not words:
        return [], None
    name, args = posixpath.basename(words[0]), words[1:]
    if name != "git":
        recognise = _COMMANDS.get(name)
        return (recognise(args, simple.heredocs) if recognise else []), None
    directory = None
    while args and args[0].startswith("-"):
        option = args.pop(0)
        if option in ("-C", "-c") and args:
            value = args.pop(0)
            if option == "-C":  # ``git -C a -C b`` works in a/b
                directory = value if directory is None else posixpath.join(directory, value)
    if not args or args[0] not in _GIT:
        return [], None
    return _GIT[args[0]](args[1:], simple.heredocs), directory


def _resolved(path: str, directory: str | None, file: bool = True) -> str | None:
    """``path`` as the shell meant it in ``directory`` (None: the shell's own), or None when unknown
    (for a ``file``, also when it names a whole directory: ``git checkout -- .`` names no file)."""
    if not path or path.startswith(("-", "/dev/")) or _NOT_A_PATH.search(path):
        return None
    if file and path.rstrip("/") in (".", "..", ""):
        return None
    if path.startswith(("/", "~")) or directory is None:
        return path
    if directory == _UNKNOWN:
        return None
    return posixpath.normpath(posixpath.join(directory, path))


def known_to_succeed(commands: Sequence[Simple]) -> list[bool]:
    """For each simple command of a line that exited with 0: is it known to have run and succeeded?"""
    known = [False] * len(commands)
    following = True  # the pipeline after the current one is known to have succeeded (the line's end: yes)
    index = len(commands) - 1
    while index >= 0:
        end = index  # the last command of this pipeline; its start is where ``|`` stops joining
        while index > 0 and commands[index].before in ("|", "|&"):
            index -= 1
        start = commands[index]
        last = end == len(commands) - 1
        joined = commands[end].after in (("", "\n", ";") if last else ("&&",))
        ok = following and joined and start.before != "||" and commands[end].after != "||"
        known[end] = ok
        following = ok
        index -= 1
    return known


def written_paths(command: str, succeeded_only: bool = False) -> list[str]:
    """The files ``command`` writes, each once, in order (nothing when it cannot be read with certainty);
    ``succeeded_only``: the command line exited with 0, count only the commands known to have succeeded."""
    try:
        commands = simple_commands(command)
    except Unreadable:
        return []
    known = known_to_succeed(commands) if succeeded_only else [True] * len(commands)
    found: list[str] = []
    directory: str | None = None
    for simple, ran in zip(commands, known, strict=True):
        words = [w for w in simple.words if not _ASSIGNMENT.match(w)] if simple.words else []
        if words and words[0] == "cd":
            # ``cd`` alone, ``cd -`` or ``cd $DIR``: where the shell is is no longer known.
            resolved = _resolved(words[1], directory, file=False) if len(words) == 2 else None
            directory = _UNKNOWN if resolved is None or not ran else resolved
            continue
        if "||" in (simple.before, simple.after) or not ran:
            continue  # it may have failed, or not run at all
        paths, own = _command_paths(simple)
        base = directory if own is None else (_resolved(own, directory) or _UNKNOWN)
        for path, relative_to in [*((p, directory) for p in simple.written), *((p, base) for p in paths)]:
            resolved = _resolved(path, relative_to)
            if resolved is not None and resolved not in found:
                found.append(resolved)
    return found


def shell_written_files(*histories: Iterable[Message]) -> list[str]:
    """The files that bash tool calls which succeeded wrote in ``histories``, each once (a user's own
    shell runs, ``!cmd``, too); only the commands of a line known to have succeeded count."""
    found: dict[str, None] = {}
    for call in finished_calls(m for history in histories for m in history):
        if call.tool == "bash" and call.ok:
            found.update(dict.fromkeys(written_paths(str(call.arguments.get("command") or ""), succeeded_only=True)))
    return list(found)


__all__ = ["known_to_succeed", "shell_written_files", "written_paths"]
